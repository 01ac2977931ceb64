// Store format versions at the hub's start (hub/stores/README.md, "Format versions and
// upgrades"): today's stores, as today's code wrote them (test/fixtures/stores-today/), open with
// this code with every record there and their versions recorded; an engine store from before the
// history log (test/fixtures/engine-store-v1/) is copied beside itself and upgraded by startHub.
import t from 'tap'
import { cp, readFile, readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { Level } from 'level'
import mqtt from 'mqtt'
import { pino } from 'pino'
import { openAttestStore } from '../../hub/attest/store.ts'
import { startBroker } from '../../hub/broker/broker.ts'
import { parseConfig } from '../../hub/daemon/config.ts'
import { startHub } from '../../hub/daemon/hub.ts'
import { createEngine } from '../../hub/engine/index.ts'
import { type Log, silentLog } from '../../hub/log.ts'
import { checkStores } from '../../hub/stores/check.ts'
import { FORMATS } from '../../hub/stores/format.ts'
import { event, memoryTools } from '../engine/helpers.ts'
import { FIXTURE_SOPS } from '../fixtures/engine-store-v1/sops.ts'
import { TODAY } from '../fixtures/stores-today/expected.ts'
import { tempDir } from '../helpers/tmp.ts'

const FIXTURES = join(import.meta.dirname, '../fixtures')

/** A pino logger whose messages the test reads. */
function recordingLog(): { log: Log; lines: string[] } {
  const lines: string[] = []
  const log = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s).msg as string) })
  return { log, lines }
}

t.test("today's stores open with this code, every record there, their versions recorded", async (t) => {
  const data = join(await tempDir(t, 'svc-today-'), 'data')
  await cp(join(FIXTURES, 'stores-today/data'), data, { recursive: true })
  const { log, lines } = recordingLog()
  await checkStores({
    dataDir: data,
    stores: ['engine', 'broker'],
    ifPresent: ['attest'],
    reserve: { mb: 1, percent: null },
    log,
  })
  const names = (await readdir(data)).sort()
  t.match(
    names,
    ['attest', 'broker', 'engine', /^engine\.format2-\d{8}T\d{6}Z\.bak$/],
    'the engine (format 2) copied beside itself before its upgrade; nothing else needed one',
  )
  t.match(
    lines.filter((l) => l.startsWith('engine store')),
    [
      /^engine store: copying it to .*engine\.format2-.*\.bak before the upgrade/,
      /^engine store backup made: /,
      /^engine store: upgrading from format 2 to 3$/,
      new RegExp(
        `^engine store: now format 3 \\(\\d+ ms\\): ${TODAY.engine.runs - 1} finished and 1 unfinished runs$`,
      ),
      /^engine store: upgrading from format 3 to 4$/,
      new RegExp(
        `^engine store: now format 4 \\(\\d+ ms\\): ${TODAY.engine.runs - 1} finished and 1 unfinished runs$`,
      ),
      /^engine store upgraded to format 4; the copy from before is /,
    ],
    'the engine upgraded from format 2 to 4, told step by step',
  )
  for (const store of ['broker', 'attest'] as const)
    t.same(
      JSON.parse(await readFile(join(data, store, 'FORMAT'), 'utf8')),
      { store, format: 1 },
      `${store}: today's layout recorded as format 1`,
    )
  t.match(
    lines.filter((l) => !l.startsWith('engine store')),
    [/broker store: format 1 recorded/, /attest store: format 1 recorded/],
    'each told once',
  )
  await t.rejects(
    readFile(join(data, 'engine', 'FORMAT')),
    { code: 'ENOENT' },
    'the engine keeps one marker, its own',
  )

  // The engine: every run, the run at its approval, the held trigger, a once-only mark.
  const tools = memoryTools()
  const engine = await createEngine({
    sops: FIXTURE_SOPS,
    tools: tools.registry,
    dbPath: join(data, 'engine'),
  })
  const all = await engine.queryRuns({ limit: 100 })
  t.equal(all.runs.length, TODAY.engine.runs, 'every run')
  t.equal((await engine.queryRuns({ state: 'completed' })).runs.length, TODAY.engine.completed)
  t.match(await engine.queryRuns({ state: 'failed' }), { runs: [{ sop: 'breaks' }] })
  t.match(engine.pending(), [{ sop: 'gate', state: 'waiting_approval' }], 'the run waiting at its approval')
  t.match(engine.keptTriggers(), [{ sop: 'gate', kind: 'held' }], 'the held trigger')
  t.match(
    await engine.trigger('press', { ...event({ i: 0 }), once: { key: 'press 0', check: true } }),
    { duplicate: true },
    'a once-only mark still holds',
  )
  await engine.close()

  // The broker: the retained message, and the QoS 1 message queued for the offline session.
  const broker = await startBroker({
    host: '127.0.0.1',
    port: 0,
    wsPort: null,
    dbPath: join(data, 'broker'),
    log: silentLog,
  })
  t.teardown(() => broker.close())
  const got: { topic: string; payload: string; retain: boolean }[] = []
  const client = mqtt.connect(broker.url, {
    clientId: TODAY.broker.clientId,
    clean: false,
    reconnectPeriod: 0,
  })
  t.teardown(() => client.endAsync(true))
  client.on('message', (topic, payload, packet) =>
    got.push({ topic, payload: payload.toString(), retain: packet.retain }),
  )
  const ack = await new Promise<mqtt.IConnackPacket>((resolve) => client.once('connect', resolve))
  t.ok(ack.sessionPresent, 'the persistent session is still there')
  await client.subscribeAsync(TODAY.broker.retainedTopic, { qos: 1 })
  await waitMessages(got, 2)
  t.match(
    got.sort((a, b) => a.topic.localeCompare(b.topic)),
    [
      { topic: TODAY.broker.queuedTopic, payload: TODAY.broker.queuedPayload },
      { topic: TODAY.broker.retainedTopic, payload: TODAY.broker.retainedPayload, retain: true },
    ],
    'the queued QoS 1 message delivered to the reconnecting client, and the retained one',
  )

  // The attestation store: every line, in the state it was left in.
  const attest = await openAttestStore(join(data, 'attest'))
  const states: string[] = []
  for await (const r of attest.range()) states.push(r.state)
  t.same(states, TODAY.attest.states, 'every attested line, in its state')
  await attest.close()
})

async function waitMessages(got: unknown[], n: number): Promise<void> {
  while (got.length < n) await new Promise((r) => setTimeout(r, 20))
}

t.test(
  'an engine store from before the history log is copied beside itself and upgraded at start',
  async (t) => {
    const home = await tempDir(t, 'svc-upgrade-')
    const data = join(home, 'data')
    await cp(join(FIXTURES, 'engine-store-v1/store'), join(data, 'engine'), { recursive: true })
    const cfg = parseConfig(
      `[hub]\nsops_dir = "${join(home, 'sops')}"\ndata_dir = "${data}"\n[broker]\nport = 0\n[webhook]\nenabled = false\n`,
      null,
      { SVC_HOME: home },
    )
    if (!cfg.ok) throw new Error(cfg.error)
    const { log, lines } = recordingLog()
    const hub = await startHub(cfg.config, log)
    t.teardown(() => hub.close())

    const baks = (await readdir(data)).filter((n) => n.endsWith('.bak'))
    t.match(baks, [/^engine\.format1-\d{8}T\d{6}Z\.bak$/], 'one copy beside the store, named for its format')
    const upgrade = lines.filter((l) => l.startsWith('engine store'))
    t.match(
      upgrade,
      [
        /^engine store: copying it to .*engine\.format1-.*\.bak before the upgrade \(\d+ files, /,
        /^engine store backup made: /,
        /^engine store: upgrading from format 1 to 2 \(8 runs\)$/,
        /^engine store: upgrading, 8 of 8$/,
        /^engine store: now format 2 \(\d+ ms\): 7 finished and 1 unfinished runs$/,
        /^engine store: upgrading from format 2 to 3$/,
        /^engine store: now format 3 \(\d+ ms\): 7 finished and 1 unfinished runs$/,
        /^engine store: upgrading from format 3 to 4$/,
        /^engine store: now format 4 \(\d+ ms\): 7 finished and 1 unfinished runs$/,
        /^engine store upgraded to format 4; the copy from before is /,
      ],
      'the upgrade told step by step, each format in turn',
    )
    t.equal((await hub.engine.queryRuns({ limit: 100 })).runs.length, 8, 'every run, through the running hub')

    // The copy is the store as it was: format 1, its runs as LevelDB values.
    const old = new Level<string, string>(join(data, baks[0]!), { createIfMissing: false })
    await old.open()
    t.equal(await old.get('meta!layout'), undefined, 'the copy still has no layout marker')
    let records = 0
    for await (const _ of old.keys({ gt: 'fin!', lt: 'fin!\xff' })) records++
    t.equal(records, 7, 'and its finished runs as values')
    await old.close()

    await hub.close()
    // A second start finds the current format: no second copy.
    const again = await startHub(cfg.config, silentLog)
    await again.close()
    t.equal((await readdir(data)).filter((n) => n.endsWith('.bak')).length, 1, 'no copy at the next start')
  },
)

t.test('the engine writes the layout the registry says is current', async (t) => {
  const dir = join(await tempDir(t, 'svc-layout-'), 'engine')
  const tools = memoryTools()
  const engine = await createEngine({ sops: FIXTURE_SOPS, tools: tools.registry, dbPath: dir })
  await engine.trigger('press', event({ i: 1 }))
  await engine.idle()
  await engine.close()
  const db = new Level<string, string>(dir, { createIfMissing: false })
  await db.open()
  t.equal(
    await db.get('meta!layout'),
    String(FORMATS.engine.current),
    'hub/stores/format.ts and store.ts agree',
  )
  await db.close()
})

t.test('no room for the copy: the start refused with one line, nothing copied or upgraded', async (t) => {
  const data = join(await tempDir(t, 'svc-room-'), 'data')
  await cp(join(FIXTURES, 'engine-store-v1/store'), join(data, 'engine'), { recursive: true })
  await t.rejects(
    checkStores({
      dataDir: data,
      stores: ['engine'],
      reserve: { mb: 1024 * 1024 * 1024, percent: null },
      log: silentLog,
    }),
    {
      name: 'StoreRefused',
      message: new RegExp(
        `^${join(data, 'engine')}: the engine store \\(.+\\) needs upgrading and a copy of it kept beside it first, but ${data} has .+ free of the .+ that takes \\(copy, upgrade and the disk reserve\\); free some space and start again$`,
      ),
    },
  )
  t.same(await readdir(data), ['engine'], 'no copy begun')
  const db = new Level<string, string>(join(data, 'engine'), { createIfMissing: false })
  await db.open()
  t.equal(await db.get('meta!layout'), undefined, 'still format 1')
  await db.close()
})
