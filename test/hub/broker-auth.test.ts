// Broker accounts and ACLs on the real embedded broker (Aedes on loopback), with real clients:
// mqtt.js, and Debian's mosquitto_pub/mosquitto_sub where installed. Mosquitto 2.0's rule:
// anonymous clients only on a listener bound to loopback; the listener decides, not the source
// address, so a 0.0.0.0 listener reached through 127.0.0.1 still wants an account. Every client
// here connects to 127.0.0.1 only.
import t from 'tap'
import { chmod, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { spawnSync } from 'node:child_process'
import mqtt from 'mqtt'
import { startBroker } from '../../hub/broker/broker.ts'
import { parseConfig } from '../../hub/daemon/config.ts'
import { startHub } from '../../hub/daemon/hub.ts'
import { main } from '../../cli/main.ts'
import { tempDir } from '../helpers/tmp.ts'
import { waitFor } from '../helpers/wait.ts'
import {
  brokerFor,
  client,
  connectCode,
  grantedQos,
  hasMosquittoClients,
  inbox,
  mosqTarget,
  recordingLog,
  run,
  writeAccounts,
} from './broker-auth-helpers.ts'

const NOT_AUTHORIZED = 5
const BAD_LOGIN = 4
const ID_REJECTED = 2
const mosqSkip = hasMosquittoClients
  ? false
  : 'mosquitto_pub/mosquitto_sub not on PATH (apt-get install mosquitto-clients)'

const ADMIN = { name: 'ops', role: 'admin', password: 'admin password 1' } as const
const ESP = { name: 'esp1', role: 'board', password: 'esp1 password 12' } as const
const READER = { name: 'dash', role: 'reader', password: 'reader password' } as const
const login = (a: { name: string; password: string }) => ({ username: a.name, password: a.password })

/** The URL of a broker listening on 0.0.0.0, reached through loopback. */
const viaLoopback = (url: string): string => url.replace('0.0.0.0', '127.0.0.1')

t.test('anonymous clients: accepted on a loopback listener, refused on a 0.0.0.0 one', async (t) => {
  const { broker: local } = await brokerFor(t)
  t.equal(await connectCode(local.url), 0, 'mqtt.js, anonymous, loopback listener: accepted')

  const { broker: open, log } = await brokerFor(t, { host: '0.0.0.0', accounts: [ADMIN] })
  t.match(open.url, /^mqtt:\/\/127\.0\.0\.1:/, 'the URL of a 0.0.0.0 listener goes through loopback')
  t.equal(
    await connectCode(open.url),
    NOT_AUTHORIZED,
    'mqtt.js, anonymous, 0.0.0.0 listener via 127.0.0.1: refused',
  )
  t.match(
    log.lines.find((l) => l.msg === 'mqtt connect refused')?.obj,
    { remote: '127.0.0.1', listener: 'mqtt', why: /only on a loopback listener/ },
    'the refusal names the rule; the source address was loopback',
  )
  t.equal(await connectCode(open.url, login(ADMIN)), 0, 'an account is accepted there')

  t.test('mosquitto_sub', { skip: mosqSkip }, async (t) => {
    const refused = await run(t, 'mosquitto_sub', [...mosqTarget(open.url), '-t', 'x', '-W', '5'])
    t.not(refused.code, 0)
    t.match(refused.stderr, /not authori[sz]ed/i)
    const pub = await client(t, local.url)
    const sub = run(t, 'mosquitto_sub', [...mosqTarget(local.url), '-t', 'plain/x', '-C', '1', '-W', '20'])
    // mosquitto_sub has no "subscribed" signal: publish retained so it arrives whenever it subscribes.
    await pub.publishAsync('plain/x', 'hello', { qos: 1, retain: true })
    const got = await sub
    t.equal(got.code, 0, got.stderr)
    t.equal(got.stdout.trim(), 'hello', 'anonymous mosquitto_sub on loopback receives')
  })
})

t.test('the WebSocket listener follows the same rule', async (t) => {
  const { broker } = await brokerFor(t, { host: '0.0.0.0', wsPort: 0, accounts: [ADMIN] })
  const ws = broker.wsUrl as string
  t.equal(await connectCode(ws), NOT_AUTHORIZED, 'anonymous over ws on 0.0.0.0: refused')
  t.equal(await connectCode(ws, login(ADMIN)), 0, 'an account over ws: accepted')
})

t.test('bad passwords and unknown users are refused, anywhere', async (t) => {
  const { broker } = await brokerFor(t, { accounts: [ADMIN, ESP] })
  t.equal(await connectCode(broker.url, { username: 'ops', password: 'admin password 2' }), BAD_LOGIN)
  t.equal(await connectCode(broker.url, { username: 'ops' }), BAD_LOGIN, 'no password')
  t.equal(await connectCode(broker.url, { username: 'nobody', password: 'admin password 1' }), BAD_LOGIN)
  t.equal(await connectCode(broker.url, { username: '@hub', password: 'guess' }), BAD_LOGIN, "the hub's name")
  t.equal(await connectCode(broker.url, login(ESP)), 0, 'the right password')
  t.test('mosquitto_pub with a wrong password', { skip: mosqSkip }, async (t) => {
    const r = await run(t, 'mosquitto_pub', [
      ...mosqTarget(broker.url, { user: 'esp1', password: 'not the password' }),
      '-t',
      'boards/esp1/t',
      '-m',
      '1',
    ])
    t.not(r.code, 0)
    t.match(r.stderr, /bad user name or password/i)
  })
})

t.test('a board account publishes and subscribes under boards/<its name>/ only', async (t) => {
  const { broker, log } = await brokerFor(t, { accounts: [ADMIN, ESP, READER] })
  const admin = await client(t, broker.url, login(ADMIN))
  const seen = await inbox(admin, '#')
  const esp = await client(t, broker.url, login(ESP))
  await esp.publishAsync('boards/esp1/temp', '21.5', { qos: 1 })
  await waitFor(() => seen.includes('boards/esp1/temp 21.5'), 'its own topic delivered')

  t.same(
    await grantedQos(esp, ['boards/esp1/cmd', '#', 'boards/+/temp', 'boards/esp2/x']),
    [1, 128, 128, 128],
    'its own filter granted; #, a wildcard board and another board get 0x80',
  )

  const closed = new Promise<void>((resolve) => esp.once('close', () => resolve()))
  void esp.publishAsync('boards/esp2/temp', 'forged', { qos: 1 }).catch(() => {})
  await closed
  t.pass('a publish under another board closes its connection (MQTT-3.3.5-2)')
  t.match(log.lines.find((l) => l.msg === 'mqtt publish refused')?.obj, {
    user: 'esp1',
    topic: 'boards/esp2/temp',
    why: /may publish only under boards\/esp1\//,
  })

  const reader = await client(t, broker.url, login(READER))
  t.same(await grantedQos(reader, ['#']), [1], 'a reader subscribes anywhere')
  const readerClosed = new Promise<void>((resolve) => reader.once('close', () => resolve()))
  void reader.publishAsync('notes/x', 'forged', { qos: 1 }).catch(() => {})
  await readerClosed
  t.pass('a reader may not publish')

  // Nothing refused was delivered: a marker sent after the refusals arrives, the forgeries never.
  await admin.publishAsync('marker/done', 'x', { qos: 1 })
  await waitFor(() => seen.includes('marker/done x'), 'marker')
  t.same(
    seen.filter((s) => s.includes('forged')),
    [],
    'no refused publish reached a subscriber',
  )

  t.test('mosquitto_pub as a board account', { skip: mosqSkip }, async (t) => {
    const as = mosqTarget(broker.url, { user: 'esp1', password: ESP.password })
    const ok = await run(t, 'mosquitto_pub', [...as, '-q', '1', '-t', 'boards/esp1/door', '-m', 'open'])
    t.equal(ok.code, 0, ok.stderr)
    await waitFor(() => seen.includes('boards/esp1/door open'), 'mosquitto_pub on its own topic delivered')
    const bad = await run(t, 'mosquitto_pub', [...as, '-q', '1', '-t', 'boards/vend9/door', '-m', 'forged'])
    t.not(bad.code, 0, 'QoS 1 under another board: the connection is lost')
    t.match(bad.stderr, /connection was lost/i)
    const sub = await run(t, 'mosquitto_sub', [...as, '-t', '#', '-W', '5'])
    t.match(sub.stderr, /denied/i, 'mosquitto_sub -t # as a board account is denied')
  })
})

t.test('hub-owned topics: only the hub publishes them, whoever asks', async (t) => {
  const { broker, log } = await brokerFor(t, { accounts: [ADMIN, ESP], hubBoards: ['vend1'] })
  const watcher = await client(t, broker.url, login(ADMIN))
  const seen = await inbox(watcher, '#')
  const forgeries: [string, mqtt.IClientOptions, string][] = [
    ['an admin on a [[boards]] signal', login(ADMIN), 'boards/vend1/coin'],
    ['an admin on availability', login(ADMIN), 'boards/esp1/availability'],
    ['an anonymous loopback client on a [[boards]] signal', {}, 'boards/vend1/coin'],
    ['an anonymous loopback client on availability', {}, 'boards/vend1/availability'],
    ['a board account on its own availability', login(ESP), 'boards/esp1/availability'],
    ['an anonymous client on svc/', {}, 'svc/hub/state'],
    ['an anonymous client on $SYS', {}, '$SYS/x'],
    ['an anonymous client sending a board command', {}, 'boards/vend1/cmd'],
    ['a board account sending a command', login(ESP), 'boards/esp1/cmd'],
  ]
  for (const [who, opts, topic] of forgeries) {
    const c = await mqtt.connectAsync(broker.url, { reconnectPeriod: 0, ...opts })
    const closed = new Promise<void>((resolve) => c.once('close', () => resolve()))
    void c.publishAsync(topic, 'forged', { qos: 1, retain: true }).catch(() => {})
    await closed
    await c.endAsync(true)
    t.pass(`${who} (${topic}): the connection is closed (MQTT-3.3.5-2)`)
  }
  // Refusals are logged at a bounded rate: the first per account (and one for all anonymous
  // clients) at once, the rest counted into a summary.
  const logged = log.lines
    .filter((l) => l.msg === 'mqtt publish refused')
    .map((l) => [l.obj.user, l.obj.topic])
  t.same(
    logged,
    [
      ['ops', 'boards/vend1/coin'],
      [null, 'boards/vend1/coin'],
      ['esp1', 'boards/esp1/availability'],
    ],
    'the first refusal of each logged at once, with who and where',
  )
  // What may pass: an admin's command to a [[boards]] board, the hub's own availability.
  await watcher.publishAsync('boards/vend1/cmd', '{"id":1,"cmd":"ping"}', { qos: 1 })
  const hub = await client(t, broker.url, broker.hubLogin)
  await hub.publishAsync('boards/vend1/availability', 'online', { qos: 1, retain: true })
  await waitFor(() => seen.includes('boards/vend1/availability online'), "the hub's availability")
  t.ok(seen.includes('boards/vend1/cmd {"id":1,"cmd":"ping"}'), 'an admin sends a board command')
  t.same(
    seen.filter((s) => s.includes('forged')),
    [],
    'no forgery delivered',
  )
  const late = await client(t, broker.url)
  const retained = await inbox(late, 'boards/#')
  await waitFor(() => retained.length > 0, 'retained')
  t.same(retained, ['boards/vend1/availability online'], 'the only retained state is the hub’s')

  t.test('mosquitto_pub forging availability', { skip: mosqSkip }, async (t) => {
    const r = await run(t, 'mosquitto_pub', [
      ...mosqTarget(broker.url),
      ...['-q', '1', '-r', '-t', 'boards/vend1/availability', '-m', 'offline'],
    ])
    t.not(r.code, 0)
    const now = await run(t, 'mosquitto_sub', [
      ...mosqTarget(broker.url),
      '-t',
      'boards/vend1/availability',
      '-C',
      '1',
      '-W',
      '20',
    ])
    t.equal(now.stdout.trim(), 'online', 'the retained availability is still the hub’s')
  })
})

t.test('a flood of refusals is logged at a bounded rate, none unseen', async (t) => {
  const { broker, log } = await brokerFor(t, { hubBoards: ['vend1'] })
  const N = 20
  for (let i = 0; i < N; i++) {
    const c = await mqtt.connectAsync(broker.url, { reconnectPeriod: 0 })
    const closed = new Promise<void>((resolve) => c.once('close', () => resolve()))
    void c.publishAsync(`boards/vend1/s${i}`, 'forged', { qos: 1 }).catch(() => {})
    await closed
    await c.endAsync(true)
  }
  const lines = () => log.lines.filter((l) => l.msg.startsWith('mqtt publish refused'))
  t.equal(lines().length, 1, 'one line while the flood lasts')
  await broker.close() // ends the window: its summary is written
  t.match(
    lines()[1],
    { msg: /\(19 more since the last report\)/, obj: { suppressed: N - 1, topic: `boards/vend1/s${N - 1}` } },
    'the summary counts the rest and shows the latest',
  )
})

t.test('a will is checked like a publish, at connect', async (t) => {
  const { broker } = await brokerFor(t, { accounts: [ESP], hubBoards: ['vend1'] })
  const will = (topic: string) => ({
    will: { topic, payload: Buffer.from('offline'), qos: 1 as const, retain: true },
  })
  t.equal(
    await connectCode(broker.url, will('boards/vend1/availability')),
    NOT_AUTHORIZED,
    'anonymous will on availability',
  )
  t.equal(await connectCode(broker.url, { ...login(ESP), ...will('boards/other/x') }), NOT_AUTHORIZED)
  t.equal(await connectCode(broker.url, { ...login(ESP), ...will('boards/esp1/status') }), 0, 'its own topic')
})

t.test("the hub's client id is the hub's alone", async (t) => {
  const { broker } = await brokerFor(t, { accounts: [ADMIN], hubClientId: 'svc-hub-test' })
  t.equal(await connectCode(broker.url, { clientId: 'svc-hub-test' }), ID_REJECTED, 'anonymous')
  t.equal(
    await connectCode(broker.url, { ...login(ADMIN), clientId: 'svc-hub-test' }),
    ID_REJECTED,
    'even an admin',
  )
  t.equal(await connectCode(broker.url, { ...broker.hubLogin, clientId: 'svc-hub-test' }), 0, 'the hub')
})

t.test('the running broker follows the accounts file', async (t) => {
  const { broker, accountsFile, log } = await brokerFor(t, { host: '0.0.0.0', accounts: [ADMIN] })
  t.equal(await connectCode(broker.url, login(ESP)), BAD_LOGIN, 'not yet an account')
  await writeAccounts(accountsFile, [ADMIN, ESP])
  // The folder is watched: no signal needed.
  await waitFor(async () => (await connectCode(broker.url, login(ESP))) === 0, 'the new account accepted')
  const esp = await client(t, broker.url, login(ESP))
  const dropped = new Promise<void>((resolve) => esp.once('close', () => resolve()))
  await writeAccounts(accountsFile, [ADMIN])
  await dropped
  t.pass('removing an account disconnects its clients')
  t.equal(await connectCode(broker.url, login(ESP)), BAD_LOGIN, 'and refuses it from then on')

  await writeFile(accountsFile, 'ops:admin::not-a-hash\n', { mode: 0o600 })
  await broker.reloadAccounts() // what SIGHUP does
  t.match(
    log.lines.find((l) => l.level === 'error' && /not reloaded/.test(l.msg))?.obj,
    { err: /broker-accounts:1: account "ops": not a \$scrypt\$/ },
    'a garbled file is reported with its line',
  )
  t.equal(await connectCode(broker.url, login(ADMIN)), 0, 'and the accounts in force stay')
})

t.test('a bad accounts file stops the start, naming the file', async (t) => {
  const dir = await tempDir(t)
  const file = join(dir, 'broker-accounts')
  const start = () =>
    startBroker({
      host: '127.0.0.1',
      port: 0,
      wsPort: null,
      dbPath: join(dir, 'b'),
      log: recordingLog(),
      accountsFile: file,
    })
  await writeAccounts(file, [ADMIN])
  await chmod(file, 0o644)
  await t.rejects(start(), { message: /mode 0644 .* chmod 600/ }, 'readable by others')
  await chmod(file, 0o600)
  const text = await readFile(file, 'utf8')
  await writeFile(file, `${text}ops:admin::$scrypt$ln=14,r=8,p=1$AAAA$BBBB\n`)
  await t.rejects(start(), { message: /broker-accounts:4: account "ops" appears twice/ })
  await writeFile(file, 'garbage\n')
  await t.rejects(start(), { message: /broker-accounts:1: expected name:role:board:hash/ })
  await writeFile(file, 'x:owner::$scrypt$ln=14,r=8,p=1$AAAA$BBBB\n')
  await t.rejects(start(), { message: /unknown role "owner"/ })
})

t.test('the hub refuses to start on 0.0.0.0 with no accounts, naming the fix', async (t) => {
  const home = await tempDir(t)
  const toml = join(home, 'hub.toml')
  await writeFile(
    toml,
    '[broker]\nhost = "0.0.0.0"\nport = 0\n[webhook]\nenabled = false\n[api]\nport = 0\n[console]\nport = 0\n',
  )
  const cfg = parseConfig(await readFile(toml, 'utf8'), toml, { SVC_HOME: home })
  if (!cfg.ok) throw new Error(cfg.error)
  await t.rejects(startHub(cfg.config, recordingLog()), {
    message: /broker\.host = "0\.0\.0\.0" .*not a loopback address.*npx svc hub user add <name> --role/,
  })

  const err: string[] = []
  const io = { out: () => {}, err: (s: string) => void err.push(s), env: { SVC_HOME: home }, cwd: home }
  t.equal(await main(['hub', '--config', toml], io), 1, 'svc hub exits 1')
  t.match(err.join(''), /svc hub: could not start: .*npx svc hub user add/)

  // With an account, it starts, and its own session is never refused.
  await writeAccounts(join(home, 'data', 'broker-accounts'), [READER])
  const hub = await startHub(cfg.config, recordingLog())
  t.teardown(() => hub.close())
  t.ok(hub.mqtt.connected, "the hub's own session is in")
  t.equal(await connectCode(hub.brokerUrl), NOT_AUTHORIZED, 'anonymous clients are not')
  // SIGHUP's reload re-reads the accounts too: done when it resolves.
  await writeAccounts(join(home, 'data', 'broker-accounts'), [READER, ADMIN])
  await hub.reload()
  t.equal(await connectCode(hub.brokerUrl, login(ADMIN)), 0, 'an account added before SIGHUP is in after it')
})

const hasOpenssl = spawnSync('openssl', ['version']).error === undefined

t.test(
  'TLS and WebSocket-over-TLS listeners',
  { skip: hasOpenssl ? false : 'openssl not on PATH' },
  async (t) => {
    const dir = await tempDir(t)
    const cert = join(dir, 'cert.pem')
    const key = join(dir, 'key.pem')
    const made = spawnSync('openssl', [
      ...['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'],
      ...['-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=svc-test'],
      ...['-addext', 'subjectAltName=IP:127.0.0.1'],
    ])
    t.equal(made.status, 0, made.stderr?.toString())
    const ca = await readFile(cert)
    const { broker } = await brokerFor(t, {
      accounts: [ADMIN],
      tls: { host: '0.0.0.0', port: 0, wssPort: 0, cert, key },
    })
    const tls = viaLoopback(broker.tlsUrl as string)
    const wss = viaLoopback(broker.wssUrl as string)
    t.match(tls, /^mqtts:\/\/127\.0\.0\.1:\d+$/)
    t.match(wss, /^wss:\/\/127\.0\.0\.1:\d+$/)

    t.equal(await connectCode(tls, { ca }), NOT_AUTHORIZED, 'anonymous over TLS on 0.0.0.0: refused')
    await t.rejects(
      mqtt.connectAsync(tls, { reconnectPeriod: 0, ...login(ADMIN) }),
      { message: /self.signed|unable to verify/i },
      'a client that does not trust the certificate does not connect',
    )
    const overTls = await client(t, tls, { ca, ...login(ADMIN) })
    const overWss = await client(t, wss, { ca, ...login(ADMIN) })
    const plain = await client(t, broker.url) // the loopback plain listener still takes anonymous
    const got = await inbox(overWss, 'tls/#')
    await overTls.publishAsync('tls/a', 'via mqtts', { qos: 1 })
    await plain.publishAsync('tls/b', 'via mqtt', { qos: 1 })
    await waitFor(() => got.length === 2, 'both delivered over wss')
    t.same(got.sort(), ['tls/a via mqtts', 'tls/b via mqtt'])

    t.test('mosquitto_sub over TLS', { skip: mosqSkip }, async (t) => {
      const sub = run(t, 'mosquitto_sub', [
        ...mosqTarget(tls, { user: 'ops', password: ADMIN.password }),
        ...['--cafile', cert, '-t', 'tls/retained', '-C', '1', '-W', '20'],
      ])
      await overTls.publishAsync('tls/retained', 'kept', { qos: 1, retain: true })
      const r = await sub
      t.equal(r.code, 0, r.stderr)
      t.equal(r.stdout.trim(), 'kept')
    })

    const badDir = await tempDir(t)
    await t.rejects(
      startBroker({
        host: '127.0.0.1',
        port: 0,
        wsPort: null,
        dbPath: join(badDir, 'a'),
        log: recordingLog(),
        accountsFile: join(badDir, 'none'),
        tls: { host: '0.0.0.0', port: 0, wssPort: null, cert, key },
      }),
      { message: /broker\.tls_host = "0\.0\.0\.0" \(mqtts\) is not a loopback address.*svc hub user add/ },
      'a TLS listener beyond loopback needs accounts too',
    )
    await t.rejects(
      startBroker({
        host: '127.0.0.1',
        port: 0,
        wsPort: null,
        dbPath: join(badDir, 'b'),
        log: recordingLog(),
        tls: { host: '127.0.0.1', port: 0, wssPort: null, cert: key, key: cert },
      }),
      { message: /broker\.tls_cert \/ broker\.tls_key: not a PEM certificate with its matching key/ },
      'cert and key swapped: the start fails, naming the fields',
    )
    await t.rejects(
      startBroker({
        host: '127.0.0.1',
        port: 0,
        wsPort: null,
        dbPath: join(badDir, 'c'),
        log: recordingLog(),
        tls: { host: '127.0.0.1', port: 0, wssPort: null, cert: join(dir, 'missing.pem'), key },
      }),
      { message: /broker\.tls_cert: cannot read .*missing\.pem: ENOENT/ },
    )
  },
)
