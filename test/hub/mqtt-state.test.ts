// The hub's state on MQTT, through a real hub (embedded Aedes, a simulated board, the engine):
// svc/hub/state, svc/approvals/pending, svc/runs/<sop>/<run>, and opt-in Home Assistant
// discovery, whose payloads are checked against HA's documented keys (fixture schema). On a real
// Mosquitto, the hub's will leaves svc/hub/state `offline` when the hub is SIGKILLed.
import { spawn } from 'node:child_process'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Ajv } from 'ajv'
import mqtt from 'mqtt'
import t from 'tap'
import { createSimulatingBridge } from '../../boards/simulator/bridge.ts'
import { resolveConfig } from '../../hub/daemon/config.ts'
import { startHub } from '../../hub/daemon/hub.ts'
import { silentLog } from '../../hub/log.ts'
import { discoveryMessages, haId, signalReading } from '../../hub/mqtt-state/ha-discovery.ts'
import { PENDING_LIST_MAX, pendingApprovals } from '../../hub/mqtt-state/payloads.ts'
import { SVC_VERSION } from '../../hub/version.ts'
import type { RunSummary } from '../../sops/hub-engine.ts'
import { noMosquitto, startMosquitto } from '../helpers/mosquitto.ts'
import { type Teardown, tempDir } from '../helpers/tmp.ts'
import { waitFor } from '../helpers/wait.ts'
import { startEmbeddedBroker, storedRetained } from './embedded-broker.ts'

const root = fileURLToPath(new URL('../..', import.meta.url))

/** HA's discovery schema for the keys svc uses (test/fixtures/ha-mqtt-discovery.schema.json). */
async function haValidator() {
  const schema = JSON.parse(await readFile(join(root, 'test/fixtures/ha-mqtt-discovery.schema.json'), 'utf8'))
  const ajv = new Ajv({ allErrors: true, strict: false })
  ajv.addSchema(schema, 'ha')
  const def = (name: string) => {
    const v = ajv.getSchema(`ha#/$defs/${name}`)
    if (!v) throw new Error(`fixture schema has no $defs/${name}`)
    return v
  }
  return {
    sensor: def('sensor'),
    binary_sensor: def('binary_sensor'),
    topic: new RegExp(schema.$defs.config_topic.pattern),
    errors: (v: { errors?: unknown }) => JSON.stringify(v.errors),
  }
}

/** Every retained and live message under the topics the test watches, newest last. */
async function watch(t: Teardown, url: string, filters: string[]) {
  const c = await mqtt.connectAsync(url, { reconnectPeriod: 0 })
  t.teardown(() => c.endAsync(true))
  const got: { topic: string; payload: string; retain: boolean }[] = []
  c.on('message', (topic, p, packet) => got.push({ topic, payload: p.toString(), retain: packet.retain }))
  await c.subscribeAsync(filters, { qos: 1 })
  const last = (topic: string) => got.filter((g) => g.topic === topic).at(-1)
  const json = (topic: string) => {
    const m = last(topic)
    // biome-ignore lint/suspicious/noExplicitAny: the test reads JSON fields it checks one by one
    return m && m.payload !== '' ? (JSON.parse(m.payload) as Record<string, any>) : undefined
  }
  return { client: c, got, last, json }
}

const GATED_SOP_TOML = `[sop]
name = "gated"
description = "waits for a person"
execution_mode = "deterministic"
max_concurrent = 1
admission_policy = "hold"
agent = "a"

[[triggers]]
type = "mqtt"
topic = "plant/+/go"
`
const GATED_SOP_MD = `# gated

## Steps

1. **Check** — a person looks first.
   - kind: checkpoint
   - prompt: Go ahead?
2. **Pause**
   - call: {"tool":"wait","args":{"ms":1}}
`

async function hubIn(
  t: Teardown,
  home: string,
  o: { discovery: boolean; boards: string[]; brokerUrl?: string },
) {
  const sopsDir = join(home, 'sops')
  await mkdir(join(sopsDir, 'gated'), { recursive: true })
  await writeFile(join(sopsDir, 'gated', 'SOP.toml'), GATED_SOP_TOML)
  await writeFile(join(sopsDir, 'gated', 'SOP.md'), GATED_SOP_MD)
  const cfg = resolveConfig(
    {
      hub: { sops_dir: sopsDir, data_dir: join(home, 'data'), log_level: 'silent' },
      broker: {
        ...(o.brokerUrl ? { url: o.brokerUrl } : { port: 0 }),
        client_id: 'svc-hub-test.node',
      },
      webhook: { enabled: false },
      homeassistant: { discovery: o.discovery },
      boards: o.boards.map((name) => ({
        name,
        port: `/sim/state-${name}-${process.pid}`,
        simulate: true,
        heartbeat_ms: 0,
      })),
    },
    null,
    { SVC_HOME: home },
  )
  if (!cfg.ok) throw new Error(cfg.error)
  let bridge: ReturnType<typeof createSimulatingBridge> | undefined
  const hub = await startHub(cfg.config, silentLog, {
    createBridge: (b) => {
      bridge = createSimulatingBridge({
        ...b,
        boards: b.boards.map((x) => ({ ...x, simulate: { rate: 0 } })),
      })
      return bridge
    },
  })
  let closed = false
  const close = async () => {
    if (closed) return
    closed = true
    await hub.close()
  }
  t.teardown(close)
  return { hub, bridge: () => bridge!, close }
}

t.test('svc/hub/state, svc/approvals/pending and svc/runs/… follow a real run', async (t) => {
  const home = await tempDir(t, 'svc-state-')
  const { hub } = await hubIn(t, home, { discovery: false, boards: ['vend1'] })
  const w = await watch(t, hub.brokerUrl, ['svc/#'])

  await waitFor(() => w.json('svc/hub/state')?.boards?.vend1 === 'online', 'vend1 online in svc/hub/state')
  const s0 = w.json('svc/hub/state')!
  t.equal(s0.state, 'online')
  t.equal(s0.version, SVC_VERSION)
  t.same(s0.sops, { loaded: 1, invalid: 0 })
  t.equal(s0.approvals_pending, 0)
  t.same(w.json('svc/approvals/pending'), { count: 0, runs: [], truncated: false })

  // A trigger parks a run at its checkpoint; two more are held behind it (max_concurrent 1, hold).
  await w.client.publishAsync('plant/p1/go', '{"n":1}', { qos: 1 })
  await waitFor(() => w.json('svc/approvals/pending')?.count === 1, 'one approval waiting')
  const pend = w.json('svc/approvals/pending')!
  t.equal(pend.runs[0].sop, 'gated')
  t.equal(pend.runs[0].step, 1)
  t.equal(pend.runs[0].kind, 'checkpoint')
  t.equal(pend.runs[0].prompt, 'Go ahead?')
  const runId = pend.runs[0].run as string
  t.ok(w.last(`svc/runs/gated/${runId}`), 'the run has its own topic')
  t.equal(w.last(`svc/runs/gated/${runId}`)!.retain, false, 'run changes are not retained')
  t.equal(w.json(`svc/runs/gated/${runId}`)!.state, 'paused_checkpoint')

  await w.client.publishAsync('plant/p1/go', '{"n":2}', { qos: 1 })
  await w.client.publishAsync('plant/p1/go', '{"n":3}', { qos: 1 })
  await waitFor(() => w.json('svc/hub/state')?.held?.count === 2, 'two held in svc/hub/state')
  const s1 = w.json('svc/hub/state')!
  t.equal(s1.approvals_pending, 1)
  t.equal(s1.runs.paused_checkpoint, 1)
  t.type(s1.held.oldest_at, 'string')

  const approved = await hub.engine.approve(runId, { by: 'test' })
  t.ok(approved.ok)
  await waitFor(() => w.json(`svc/runs/gated/${runId}`)?.state === 'completed', 'the run completes')
  const states = w.got
    .filter((g) => g.topic === `svc/runs/gated/${runId}`)
    .map((g) => JSON.parse(g.payload).state)
  t.same(states.slice(-2), ['running', 'completed'], 'approved, it runs and completes')
  // The next held trigger is released and parks in its turn: still one waiting, one held.
  await waitFor(
    () =>
      w.json('svc/approvals/pending')?.runs?.[0]?.run !== runId && w.json('svc/hub/state')?.held?.count === 1,
    'the next held run parks',
  )

  // A clean stop says `offline` before the broker goes: a watcher sees it last.
  await hub.close()
  await waitFor(() => w.json('svc/hub/state')?.state === 'offline', 'offline on a clean stop')

  // The broker's store kept the board's retained topics but neither summary: the hub publishes them
  // again at each start (hub/broker/volatile-retained.ts).
  const stored = await storedRetained(join(home, 'data', 'broker'))
  t.ok(stored.includes('boards/vend1/availability'), "the board's availability is stored")
  t.same(
    stored.filter((topic) => topic.startsWith('svc/')),
    [],
    'no summary is',
  )
})

t.test(
  'on an external broker, the changes a run makes while the session is offline go out as its latest state',
  { skip: noMosquitto },
  async (t) => {
    const external = await startMosquitto(t)
    const home = await tempDir(t, 'svc-state-held-')
    const { hub, close } = await hubIn(t, home, { discovery: false, boards: [], brokerUrl: external.url })
    const sent: { topic: string; payload: string }[] = []
    hub.mqtt.on('packetsend', (p) => {
      if (p.cmd === 'publish' && p.topic.startsWith('svc/runs/'))
        sent.push({ topic: p.topic, payload: String(p.payload) })
    })
    const w = await watch(t, external.url, ['svc/approvals/pending'])
    await w.client.publishAsync('plant/p1/go', '{"n":1}', { qos: 1 })
    await waitFor(() => w.json('svc/approvals/pending')?.count === 1, 'the run parks at its checkpoint')
    const runId = w.json('svc/approvals/pending')!.runs[0].run as string
    const topic = `svc/runs/gated/${runId}`
    await waitFor(() => sent.some((m) => m.topic === topic), 'its change sent while online')

    process.kill(external.proc.pid!, 'SIGTERM')
    await waitFor(() => !hub.mqtt.connected, 'the session is offline')
    const offlineFrom = sent.length
    const states: string[] = []
    const unwatch = hub.engine.watch((c) => {
      if (c.kind === 'run' && c.run.id === runId) states.push(c.run.state)
    })
    t.ok((await hub.engine.approve(runId, { by: 'test' })).ok)
    // Waits on the changes the watcher heard, not on the store: the store can say `completed`
    // before the watcher has been told, and the check below is about what was told.
    await waitFor(() => states.includes('completed'), 'the run completes offline')
    unwatch()
    t.ok(new Set(states).size >= 2, `the run changed more than once offline (${states.join(', ')})`)
    t.equal(sent.length, offlineFrom, 'nothing sent while offline')

    await startMosquitto(t, { port: external.port })
    await waitFor(
      () => sent.slice(offlineFrom).some((m) => m.topic === topic),
      'the session back, the change goes out',
    )
    // mqtt.js sends what it queued offline in one go on reconnect: all of it is in `sent` by now.
    const after = sent.slice(offlineFrom).filter((m) => m.topic === topic)
    t.equal(after.length, 1, 'one message for the run')
    t.equal(JSON.parse(after[0]!.payload).state, 'completed', 'its latest state')
    // Stopped while its broker runs: it leaves its offline state there and ends its session.
    await close()
  },
)

t.test('a run change nobody subscribes to is not published; once somebody does, it is', async (t) => {
  const home = await tempDir(t, 'svc-state-quiet-')
  const { hub } = await hubIn(t, home, { discovery: false, boards: [] })
  const runTopics: string[] = []
  hub.broker!.aedes.on('publish', (packet) => {
    if (packet.topic.startsWith('svc/runs/')) runTopics.push(packet.topic)
  })
  const w = await watch(t, hub.brokerUrl, ['svc/approvals/pending'])
  await w.client.publishAsync('plant/p1/go', '{"n":1}', { qos: 1 })
  await waitFor(() => w.json('svc/approvals/pending')?.count === 1, 'the run parks at its checkpoint')
  const runId = w.json('svc/approvals/pending')!.runs[0].run as string
  t.same(runTopics, [], 'no svc/runs/… message while nobody subscribes to one')

  const runs = await watch(t, hub.brokerUrl, ['svc/runs/+/+'])
  t.ok((await hub.engine.approve(runId, { by: 'test' })).ok)
  await waitFor(
    () => runs.json(`svc/runs/gated/${runId}`)?.state === 'completed',
    'the change reaches the subscriber',
  )
  t.ok(runTopics.includes(`svc/runs/gated/${runId}`), 'published once somebody listens')
})

t.test(
  'Home Assistant discovery: configs valid against HA’s schema, signals as they appear, removals',
  async (t) => {
    const v = await haValidator()
    const home = await tempDir(t, 'svc-ha-')
    const first = await hubIn(t, home, { discovery: true, boards: ['vend1', 'door.2'] })
    const w = await watch(t, first.hub.brokerUrl, ['homeassistant/#', 'svc/#'])
    const node = 'svc-hub-test_node'
    const configTopic = (c: string, id: string) => `homeassistant/${c}/${node}/${id}/config`
    await waitFor(() => w.json(configTopic('sensor', 'approvals_pending')) !== undefined, 'the hub configs')
    t.ok(w.json(configTopic('binary_sensor', 'vend1_availability')), 'vend1 connectivity')
    const doorId = haId('door.2')
    t.not(doorId, 'door_2', 'a name changed to fit keeps a hash so door.2 and door_2 stay apart')
    t.ok(w.json(configTopic('binary_sensor', `${doorId}_availability`)), 'door.2 connectivity')
    t.notOk(w.json(configTopic('sensor', 'vend1_coin')), 'no signal entity before the board sent one')

    // The first coin makes the signal an entity; the JSON payload becomes attributes.
    first.bridge().simulated('vend1')!.emitEvents(1)
    await waitFor(() => w.json(configTopic('sensor', 'vend1_coin')) !== undefined, 'the coin entity')
    const coin = w.json(configTopic('sensor', 'vend1_coin'))!
    t.equal(coin.state_topic, 'boards/vend1/coin')
    t.equal(coin.json_attributes_topic, 'boards/vend1/coin')
    t.equal(coin.availability_mode, 'all')
    t.same(
      coin.availability.map((a: { topic: string }) => a.topic),
      ['svc/hub/state', 'boards/vend1/availability'],
    )
    t.same(coin.device.via_device, `svc_${node}`)

    // Every config the hub published passes HA's schema, on a topic HA accepts, retained.
    const configs = w.got.filter((g) => g.topic.startsWith('homeassistant/') && g.payload !== '')
    t.ok(configs.length >= 6, `${configs.length} configs`)
    const uniques = new Set<string>()
    for (const m of configs) {
      t.match(m.topic, v.topic, `${m.topic} is a discovery topic`)
      const component = m.topic.split('/')[1] as 'sensor' | 'binary_sensor'
      const payload = JSON.parse(m.payload)
      const check = v[component]
      t.ok(check(payload), `${m.topic}: ${v.errors(check)}`)
      uniques.add(payload.unique_id)
    }
    t.equal(uniques.size, new Set(configs.map((c) => c.topic)).size, 'one unique_id per entity')
    // The schema is strict enough to catch what HA would reject or ignore.
    const good = w.json(configTopic('sensor', 'approvals_pending'))!
    const sensorCheck = v.sensor
    t.ok(sensorCheck(good), 'the approvals sensor passes')
    t.notOk(sensorCheck({ ...good, availablity: [] }), 'a misspelt key is refused')
    t.notOk(sensorCheck({ ...good, availability_topic: 'x' }), 'availability and availability_topic together')
    const { unique_id: _u, ...noId } = good
    t.notOk(sensorCheck(noId), 'a device without unique_id')
    t.notOk(sensorCheck({ ...good, device: { name: 'x' } }), 'a device without identifiers')

    // HA restarts (its birth message): the configs come again.
    const before = w.got.length
    await w.client.publishAsync('homeassistant/status', 'online', { qos: 1 })
    await waitFor(
      () => w.got.slice(before).some((g) => g.topic === configTopic('sensor', 'vend1_coin')),
      'configs published again after HA’s birth message',
    )

    // Restart without door.2: its entities are removed (empty retained config); the coin is remembered.
    await first.close()
    const second = await hubIn(t, home, { discovery: true, boards: ['vend1'] })
    const w2 = await watch(t, second.hub.brokerUrl, ['homeassistant/#'])
    await waitFor(
      () =>
        w2.last(configTopic('binary_sensor', `${doorId}_availability`)) === undefined ||
        w2.last(configTopic('binary_sensor', `${doorId}_availability`))!.payload === '',
      'door.2 removed',
    )
    await waitFor(
      () => w2.json(configTopic('sensor', 'vend1_coin')) !== undefined,
      'vend1 coin kept across restart',
    )

    // Discovery turned off: every entity this hub published is removed.
    await second.close()
    const third = await hubIn(t, home, { discovery: false, boards: ['vend1'] })
    const w3 = await watch(t, third.hub.brokerUrl, ['homeassistant/#'])
    await new Promise((r) => setTimeout(r, 200))
    t.same(
      w3.got.filter((g) => g.payload !== ''),
      [],
      'no discovery config is left retained',
    )
  },
)

t.test('pure: payloads are bounded and readings follow the payload', async (t) => {
  const run = (i: number): RunSummary => ({
    id: `r${i}`,
    sop: 's',
    state: 'waiting_approval',
    current: 2,
    createdAt: i,
    updatedAt: 1000 + i,
    gate: { step: 2, kind: 'approval', reason: 'requires_confirmation', operatorOnly: true, since: i },
  })
  const many = JSON.parse(pendingApprovals(Array.from({ length: PENDING_LIST_MAX + 5 }, (_, i) => run(i))))
  t.equal(many.count, PENDING_LIST_MAX + 5, 'the count is whole')
  t.equal(many.runs.length, PENDING_LIST_MAX, 'the list is bounded')
  t.equal(many.truncated, true)
  t.same(signalReading('21.5'), { state_class: 'measurement' })
  t.same(signalReading('{"v":3,"unit":"C"}'), {
    value_template: '{{ value_json.v }}',
    state_class: 'measurement',
    json_attributes_topic: true,
  })
  t.same(signalReading('{"slot":"A1"}'), { value_template: '{{ value[:255] }}', json_attributes_topic: true })
  t.same(signalReading('open'), { value_template: '{{ value[:255] }}' })
  t.equal(haId('vend1'), 'vend1')
  t.not(haId('a.b'), haId('a_b'))
  // A board with more signals than the cap gets no more entities than the cap.
  const msgs = discoveryMessages({
    prefix: 'homeassistant',
    nodeId: 'n',
    version: '0',
    boards: [{ name: 'b', signals: Array.from({ length: 100 }, (_, i) => ({ name: `s${i}`, sample: '1' })) }],
  })
  t.equal(msgs.filter((m) => m.topic.startsWith('homeassistant/sensor/n/b_s')).length, 32)
})

t.test('the version the hub reports is package.json’s', async (t) => {
  const pkg = JSON.parse(await readFile(join(root, 'package.json'), 'utf8'))
  t.equal(SVC_VERSION, pkg.version)
})

t.test('bad [homeassistant] settings are refused with the field named', async (t) => {
  const bad = resolveConfig({ homeassistant: { node_id: 'has space' } }, null, { SVC_HOME: '/tmp/x' })
  t.notOk(bad.ok)
  if (!bad.ok) t.match(bad.error, /homeassistant\.node_id/)
  const wild = resolveConfig({ homeassistant: { prefix: 'ha/#' } }, null, { SVC_HOME: '/tmp/x' })
  t.notOk(wild.ok)
  if (!wild.ok) t.match(wild.error, /homeassistant\.prefix/)
  const unknown = resolveConfig({ homeassistant: { discover: true } }, null, { SVC_HOME: '/tmp/x' })
  t.notOk(unknown.ok)
  if (!unknown.ok) t.match(unknown.error, /homeassistant\.discover: unknown field/)
})

t.test(
  'external broker: SIGKILL the hub and its will leaves svc/hub/state offline',
  { skip: noMosquitto },
  async (t) => {
    const mosq = await startMosquitto(t)
    const home = await tempDir(t, 'svc-hub-home-')
    await writeFile(
      join(home, 'hub.toml'),
      `[broker]\nurl = "${mosq.url}"\nclient_id = "svc-test-${process.pid}-${Date.now()}"\n[webhook]\nenabled = false\n[api]\nport = 0\n[console]\nport = 0\n`,
    )
    const w = await watch(t, mosq.url, ['svc/hub/state'])
    const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'cli/main.ts'), 'hub'], {
      cwd: root,
      env: { ...process.env, SVC_HOME: home },
      stdio: 'ignore',
    })
    const exited = new Promise<NodeJS.Signals | null>((r) => child.once('exit', (_c, s) => r(s)))
    t.teardown(async () => {
      if (child.exitCode === null && child.signalCode === null) {
        process.kill(child.pid!, 'SIGKILL')
        await exited
      }
    })
    await waitFor(() => w.json('svc/hub/state')?.state === 'online', 'the hub online', { timeoutMs: 60_000 })
    process.kill(child.pid!, 'SIGKILL')
    t.equal(await exited, 'SIGKILL')
    await waitFor(() => w.json('svc/hub/state')?.state === 'offline', 'the will: offline')
    t.equal(w.last('svc/hub/state')!.retain, false, 'delivered live to a subscriber')
    const late = await watch(t, mosq.url, ['svc/hub/state'])
    await waitFor(() => late.got.length === 1, 'the retained state')
    t.same(late.json('svc/hub/state'), { state: 'offline' })
  },
)

t.test(
  'an external broker that keeps svc/ for another hub: the hub runs without its will and state topics, and says so',
  async (t) => {
    const home = await tempDir(t, 'svc-state-ext-')
    // Another hub's embedded broker: its ACL refuses svc/ topics (and wills on them) from anyone but its own hub.
    const other = await startEmbeddedBroker(t, { dbPath: join(home, 'other') })
    const warnings: string[] = []
    const log = { ...silentLog, warn: (_o: object, msg?: string) => void warnings.push(String(msg)) }
    const cfg = resolveConfig(
      {
        hub: { sops_dir: join(home, 'sops'), data_dir: join(home, 'data'), log_level: 'silent' },
        broker: { url: other.url, client_id: `svc-ext-${process.pid}` },
        webhook: { enabled: false },
      },
      null,
      { SVC_HOME: home },
    )
    if (!cfg.ok) throw new Error(cfg.error)
    const hub = await startHub(cfg.config, log)
    t.teardown(() => hub.close())
    t.match(warnings.join('\n'), /refuses svc\/ topics from this hub/)
    // The session stays up: a refused publish would have closed it.
    await new Promise((r) => setTimeout(r, 300))
    t.ok(hub.mqtt.connected, 'the hub session is connected')
    t.notOk(
      warnings.some((w) => /offline/.test(w)),
      'no reconnect loop',
    )
  },
)
