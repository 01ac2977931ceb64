// A voice for the edge, through a real hub: the embedded broker with an `admin` account, the
// bridge with a simulated board, the local API and the CLI. `boards/<b>/cmd` → `boards/<b>/reply`
// over MQTT, `svc board status` and `svc board send`; bad input at each of them gets a clear error,
// reaches no board, and leaves the hub running.
import { join } from 'node:path'
import mqtt from 'mqtt'
import t from 'tap'
import { createSimulatingBridge } from '../../boards/simulator/bridge.ts'
import { accountsPath } from '../../hub/broker/accounts-file.ts'
import { svcCli } from '../helpers/cli.ts'
import { resolveConfig } from '../../hub/daemon/config.ts'
import { startHub } from '../../hub/daemon/hub.ts'
import { realParts } from '../../hub/daemon/real-parts.ts'
import { silentLog } from '../../hub/log.ts'
import { tempDir } from '../helpers/tmp.ts'
import { waitFor } from '../helpers/wait.ts'
import { writeAccounts } from './broker-auth-helpers.ts'

t.test('board commands over MQTT and the local API; status; bad input refused', async (t) => {
  const home = await tempDir(t, 'svc-hub-home-')
  const env = { ...process.env, SVC_HOME: home }
  const cfg = resolveConfig(
    {
      hub: { sops_dir: join(home, 'sops'), data_dir: join(home, 'data'), log_level: 'silent' },
      broker: { port: 0 },
      api: { port: 0 },
      console: { port: 0 },
      webhook: { enabled: false },
      boards: [{ name: 'vend1', port: '/sim/board-cmd-vend1', simulate: true, heartbeat_ms: 0 }],
    },
    null,
    env,
  )
  if (!cfg.ok) throw new Error(cfg.error)
  await writeAccounts(accountsPath(cfg.config.dataDir), [
    { name: 'ops', role: 'admin', password: 'ops-secret-1' },
  ])
  let bridge: ReturnType<typeof createSimulatingBridge> | undefined
  const hub = await startHub(cfg.config, silentLog, {
    ...realParts(env),
    createBridge: (o) => {
      bridge = createSimulatingBridge({
        ...o,
        boards: o.boards.map((b) => ({ ...b, simulate: { rate: 0 } })),
      })
      return bridge
    },
  })
  t.teardown(() => hub.close())
  await waitFor(() => bridge!.stats().boards.vend1!.state === 'online', 'vend1 online')
  const sim = bridge!.simulated('vend1')!

  const ops = await mqtt.connectAsync(hub.brokerUrl, {
    reconnectPeriod: 0,
    username: 'ops',
    password: 'ops-secret-1',
  })
  t.teardown(() => ops.endAsync(true))
  const replies: Record<string, unknown>[] = []
  ops.on('message', (topic, p) => {
    if (topic === 'boards/vend1/reply') replies.push(JSON.parse(p.toString()))
  })
  await ops.subscribeAsync('boards/vend1/reply', { qos: 1 })
  const ask = async (payload: string, opts: { retain?: boolean } = {}) => {
    const n = replies.length
    await ops.publishAsync('boards/vend1/cmd', payload, { qos: 1, retain: opts.retain ?? false })
    return waitFor(() => replies.length > n && replies[n], `a reply to ${payload}`)
  }

  t.test('MQTT: commands answered on boards/<b>/reply with their id', async (t) => {
    t.same(await ask('{"id":"a1","cmd":"ping"}'), { id: 'a1', ok: true, result: 'pong' })
    t.same(await ask('{"id":7,"cmd":"gpio_write","args":{"pin":13,"value":1}}'), {
      id: 7,
      ok: true,
      result: { pin: 13, value: 1 },
    })
    t.same(await ask('{"cmd":"gpio_read","args":{"pin":13}}'), {
      id: null,
      ok: true,
      result: { pin: 13, value: 1 },
    })
    t.same(
      await ask('{"id":"u","cmd":"dispense_all"}'),
      { id: 'u', ok: false, error: 'cmd: unknown command', code: 'board_error' },
      'an unknown command: the board says so',
    )
  })

  t.test('MQTT: garbage payloads are refused with an error and reach no board', async (t) => {
    const before = sim.stats().commands
    t.match(await ask('not json'), { id: null, ok: false, error: /^payload: not JSON/, code: 'bad_command' })
    t.match(await ask('[1,2]'), { id: null, ok: false, error: /^payload: must be a JSON object/ })
    t.match(await ask('{"id":"x","cmd":"Reboot Now"}'), {
      id: 'x',
      ok: false,
      error: /^cmd: "Reboot Now" must match/,
    })
    t.match(await ask('{"id":"y","cmd":"ping","pin":3}'), {
      id: 'y',
      ok: false,
      error: /^pin: unknown field/,
    })
    t.match(await ask('{"id":{"a":1},"cmd":"ping"}'), { id: null, ok: false, error: /^id: must be a string/ })
    t.match(await ask('{"id":"z","cmd":"ping","timeout_ms":0}'), {
      id: 'z',
      ok: false,
      error: /^timeout_ms: /,
    })
    t.match(await ask('\xff\xfe'), { ok: false, error: /^payload: not JSON/ })
    t.equal(sim.stats().commands, before, 'nothing was written to the board')
  })

  t.test('MQTT: a retained command is not run', async (t) => {
    const before = sim.stats().commands
    const n = replies.length
    await ops.publishAsync('boards/vend1/cmd', '{"id":"r","cmd":"ping"}', { qos: 1, retain: true })
    t.teardown(() => ops.publishAsync('boards/vend1/cmd', '', { qos: 1, retain: true }))
    // The live copy is delivered unflagged (MQTT 3.1.1 §3.3.1.3) and runs once; the retained
    // copy a new command session would receive at subscribe must not.
    await waitFor(() => replies.length > n, 'the live copy answered')
    const late = await mqtt.connectAsync(hub.brokerUrl, {
      reconnectPeriod: 0,
      username: 'ops',
      password: 'ops-secret-1',
    })
    t.teardown(() => late.endAsync(true))
    const got = new Promise<boolean>((r) => late.once('message', (_t, _p, pk) => r(pk.retain)))
    await late.subscribeAsync('boards/vend1/cmd', { qos: 1 })
    t.equal(await got, true, 'the broker holds the command retained')
    t.equal(sim.stats().commands, before + 1, 'it ran once, live')
  })

  t.test('svc board status and svc board send through the local API', async (t) => {
    const svc = svcCli(env)
    let r = await svc('board', 'status', '--json')
    t.equal(r.code, 0)
    const s = JSON.parse(r.out) as { boards: Record<string, Record<string, unknown>> }
    t.match(s.boards.vend1, {
      kind: 'serial',
      state: 'online',
      fw: 'svc-companion/0.2.0',
      version: '0.2.0',
      proto: 1,
      garbage: 0,
    })
    r = await svc('board', 'status')
    t.equal(r.code, 0)
    t.match(
      r.out,
      /^BOARD +STATE +KIND +FIRMWARE +VERSION +PROTO +LINES +EVENTS +GARBAGE +OVERLONG +RECONNECTS +LAST EVENT\nvend1 +online +serial +svc-companion +0\.2\.0 +1 /,
    )

    r = await svc('board', 'send', 'vend1', 'gpio_write', '{"pin":4,"value":1}')
    t.equal(r.code, 0)
    t.equal(r.out, '{"pin":4,"value":1}\n', 'the board answer printed')
    r = await svc('board', 'send', 'vend1', 'ping', '--json')
    t.equal(r.code, 0)
    t.same(JSON.parse(r.out), { board: 'vend1', cmd: 'ping', ok: true, result: 'pong' })

    const before = sim.stats().commands
    const refused = async (argv: string[], code: number, err: RegExp) => {
      const r = await svc('board', 'send', ...argv)
      t.equal(r.code, code, argv.join(' '))
      t.match(r.err, err)
    }
    await refused(['vend1', 'gpio_write', '{pin:4}'], 2, /args-json: not JSON/)
    await refused(['vend1', 'Bad'], 2, /cmd: must match/)
    await refused(['vend1'], 2, /board and cmd are required/)
    await refused(['vend1', 'ping', '{}', 'extra'], 2, /unexpected argument "extra"/)
    await refused(['nope', 'ping'], 1, /unknown board "nope" \(configured: vend1\)/)
    t.equal(sim.stats().commands, before, 'none of these reached the board')
    await refused(['vend1', 'dispense_all'], 1, /cmd: unknown command/)
    await refused(['vend1', 'gpio_read', '{"pin":99}'], 1, /args\.pin: must be an integer/)
    sim.setMute(true)
    await refused(['vend1', 'ping', '--timeout', '100'], 1, /did not answer "ping" .* within 100 ms/)
    sim.setMute(false)
    t.same(
      await ask('{"id":"after","cmd":"ping"}'),
      { id: 'after', ok: true, result: 'pong' },
      'the hub still serves',
    )
  })

  t.test('the local API refuses bad bodies with the field named', async (t) => {
    const { readApiInfo, readApiToken } = await import('../../hub/api/token.ts')
    const { svcPaths } = await import('../../hub/paths.ts')
    const info = await readApiInfo(svcPaths(env).apiInfo)
    const token = await readApiToken(svcPaths(env).apiToken)
    if (!info.ok || !token.ok) throw new Error('no API info')
    const post = (path: string, body: string) =>
      fetch(info.value.url + path, {
        method: 'POST',
        headers: { authorization: `Bearer ${token.value}`, 'content-type': 'application/json' },
        body,
      })
    let r = await post('/boards/vend1/send', '{"cmd":"ping","frob":1}')
    t.equal(r.status, 400)
    t.match(await r.json(), { error: /frob/ })
    r = await post('/boards/vend1/send', '{not json')
    t.equal(r.status, 400)
    r = await post('/boards/a%2Fb/send', '{"cmd":"ping"}')
    t.equal(r.status, 400)
    r = await post('/boards/vend1/send', '{"cmd":"ping"}')
    t.equal(r.status, 200)
  })
})
