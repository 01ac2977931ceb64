// GET /metrics on a real `svc hub` process: scraped before, during and after runs of real SOPs
// triggered over MQTT, every answer read by a strict parser of the Prometheus text format (HELP
// and TYPE for every family, no duplicate series, counters never going back); the counters
// move by the events sent, runs by state agree with the run history, a simulated board shows
// up online with its counters, attested lines wait unsynced. The local API's token guards the
// route; `[metrics]`'s own listener beyond loopback asks for its token, in the header only.
import t, { type Test } from 'tap'
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises'
import { connect } from 'node:net'
import { networkInterfaces } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import mqtt from 'mqtt'
import { resolveConfig } from '../../hub/daemon/config.ts'
import { startHub } from '../../hub/daemon/hub.ts'
import { realParts } from '../../hub/daemon/real-parts.ts'
import { silentLog } from '../../hub/log.ts'
import { parseProcIo } from '../../hub/metrics/disk.ts'
import { families } from '../../hub/metrics/registry.ts'
import { startHubChild } from '../helpers/hub-process.ts'
import { noMosquitto, startMosquitto } from '../helpers/mosquitto.ts'
import { freePort } from '../helpers/ports.ts'
import { tempDir } from '../helpers/tmp.ts'
import { waitFor } from '../helpers/wait.ts'

const root = fileURLToPath(new URL('../..', import.meta.url))

// ---- a strict reader of the Prometheus text exposition format (version 0.0.4) -------------

type Labels = Record<string, string>
interface Sample {
  name: string
  labels: Labels
  value: number
}
interface Family {
  name: string
  type: string
  help: string
  samples: Sample[]
}
interface Exposition {
  families: Map<string, Family>
  /** The value of the series with exactly these labels, or undefined. */
  get(name: string, labels?: Labels): number | undefined
  samples(name: string): Sample[]
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped'])

/** A float as Go's strconv.ParseFloat reads it (the format's rule): NaN and Inf in any case. */
function parseValue(s: string, where: string): number {
  if (/^nan$/i.test(s)) return Number.NaN
  if (/^\+?inf(inity)?$/i.test(s)) return Number.POSITIVE_INFINITY
  if (/^-inf(inity)?$/i.test(s)) return Number.NEGATIVE_INFINITY
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(s)) throw new Error(`${where}: "${s}" is not a value`)
  return Number(s)
}

function parseLabels(s: string, where: string): { labels: Labels; rest: string } {
  const labels: Labels = {}
  let i = 1 // after '{'
  for (;;) {
    if (s[i] === '}') return { labels, rest: s.slice(i + 1) }
    const eq = s.indexOf('=', i)
    if (eq < 0) throw new Error(`${where}: a label without =`)
    const name = s.slice(i, eq)
    if (!LABEL.test(name) || name.startsWith('__')) throw new Error(`${where}: bad label name "${name}"`)
    if (name in labels) throw new Error(`${where}: label ${name} twice`)
    if (s[eq + 1] !== '"') throw new Error(`${where}: label ${name}'s value is not quoted`)
    let v = ''
    let j = eq + 2
    for (;;) {
      const c = s[j]
      if (c === undefined) throw new Error(`${where}: unterminated label value`)
      if (c === '"') break
      if (c === '\\') {
        const e = s[j + 1]
        if (e === '\\') v += '\\'
        else if (e === '"') v += '"'
        else if (e === 'n') v += '\n'
        else throw new Error(`${where}: bad escape \\${e}`)
        j += 2
      } else {
        v += c
        j++
      }
    }
    labels[name] = v
    i = j + 1
    if (s[i] === ',') i++
    else if (s[i] !== '}') throw new Error(`${where}: expected , or } after label ${name}`)
  }
}

/** The family a sample name belongs to, by the suffixes its type allows. */
function familyOf(name: string, families: Map<string, Family>): Family | undefined {
  const exact = families.get(name)
  if (exact && exact.type !== 'histogram') return exact
  for (const suffix of ['_bucket', '_sum', '_count']) {
    if (!name.endsWith(suffix)) continue
    const f = families.get(name.slice(0, -suffix.length))
    if (f?.type === 'histogram' || (f?.type === 'summary' && suffix !== '_bucket')) return f
  }
  return undefined
}

function parseExposition(text: string): Exposition {
  if (!text.endsWith('\n')) throw new Error('the exposition does not end with a newline')
  const families = new Map<string, Family>()
  const seen = new Set<string>()
  const closed = new Set<string>()
  let open: string | null = null
  const lines = text.slice(0, -1).split('\n')
  lines.forEach((line, n) => {
    const where = `line ${n + 1}`
    if (line === '') return
    if (line.startsWith('#')) {
      const m = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line)
      if (!m) throw new Error(`${where}: a comment that is neither HELP nor TYPE: ${line}`)
      const [, kind, name, rest] = m as unknown as [string, string, string, string]
      if (!NAME.test(name)) throw new Error(`${where}: bad metric name ${name}`)
      if (closed.has(name)) throw new Error(`${where}: ${name} is described again after other families`)
      let f = families.get(name)
      if (!f) {
        if (open !== null && open !== name) closed.add(open)
        f = { name, type: '', help: '', samples: [] }
        families.set(name, f)
        open = name
      }
      if (f.samples.length > 0) throw new Error(`${where}: ${kind} of ${name} after its samples`)
      if (kind === 'HELP') {
        if (f.help !== '') throw new Error(`${where}: second HELP for ${name}`)
        if (rest === '') throw new Error(`${where}: empty HELP for ${name}`)
        f.help = rest
      } else {
        if (f.type !== '') throw new Error(`${where}: second TYPE for ${name}`)
        if (!TYPES.has(rest)) throw new Error(`${where}: unknown type ${rest}`)
        f.type = rest
      }
      return
    }
    const nm = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line)
    if (!nm) throw new Error(`${where}: no metric name: ${line}`)
    const name = nm[0]
    let rest = line.slice(name.length)
    let labels: Labels = {}
    if (rest.startsWith('{')) ({ labels, rest } = parseLabels(rest, where))
    const parts = rest.trim().split(' ')
    if (!rest.startsWith(' ') || parts.length < 1 || parts.length > 2)
      throw new Error(`${where}: expected " value [timestamp]": ${line}`)
    const value = parseValue(parts[0] as string, where)
    if (parts[1] !== undefined && !/^-?\d+$/.test(parts[1])) throw new Error(`${where}: bad timestamp`)
    const f = familyOf(name, families)
    if (!f) throw new Error(`${where}: sample ${name} has no HELP/TYPE before it`)
    if (f.type === '' || f.help === '') throw new Error(`${where}: ${f.name} lacks HELP or TYPE`)
    if (f.name !== open) throw new Error(`${where}: samples of ${f.name} are not together`)
    if (f.type === 'counter' && !(value >= 0) && !Number.isNaN(value))
      throw new Error(`${where}: counter ${name} is negative`)
    const key = `${name}{${Object.keys(labels)
      .sort()
      .map((k) => `${k}=${JSON.stringify(labels[k])}`)
      .join(',')}}`
    if (seen.has(key)) throw new Error(`${where}: duplicate series ${key}`)
    seen.add(key)
    f.samples.push({ name, labels, value })
  })
  for (const f of families.values())
    if (f.type === '' || f.help === '') throw new Error(`${f.name} lacks HELP or TYPE`)
  const sameLabels = (a: Labels, b: Labels) =>
    Object.keys(a).length === Object.keys(b).length && Object.entries(b).every(([k, v]) => a[k] === v)
  const all = () => [...families.values()].flatMap((f) => f.samples)
  return {
    families,
    get: (name, labels = {}) => all().find((s) => s.name === name && sameLabels(s.labels, labels))?.value,
    samples: (name) => all().filter((s) => s.name === name),
  }
}

t.test('the strict reader refuses what Prometheus would', async (t) => {
  const ok = '# HELP a_total x\n# TYPE a_total counter\na_total{k="v\\"q"} 1\n'
  t.equal(parseExposition(ok).get('a_total', { k: 'v"q' }), 1)
  for (const [why, text] of [
    ['no TYPE', '# HELP a x\na 1\n'],
    ['no HELP', '# TYPE a gauge\na 1\n'],
    ['duplicate series', '# HELP a x\n# TYPE a gauge\na{k="1"} 1\na{k="1"} 2\n'],
    [
      'families interleaved',
      '# HELP a x\n# TYPE a gauge\na 1\n# HELP b x\n# TYPE b gauge\nb 1\na{k="2"} 1\n',
    ],
    ['a bad value', '# HELP a x\n# TYPE a gauge\na one\n'],
    ['a bad label name', '# HELP a x\n# TYPE a gauge\na{0k="1"} 1\n'],
    ['no final newline', '# HELP a x\n# TYPE a gauge\na 1'],
    ['a negative counter', '# HELP a_total x\n# TYPE a_total counter\na_total -1\n'],
  ])
    t.throws(() => parseExposition(text as string), why as string)
})

// ---- the hub under test -------------------------------------------------------------------

const SOP = (name: string, topic: string, extra = '') =>
  `[sop]\nname = "${name}"\ndescription = "d"\nexecution_mode = "auto"\nmax_concurrent = 100\nagent = "none"\n${extra}\n[[triggers]]\ntype = "mqtt"\ntopic = "${topic}"\n`

async function writeSops(home: string): Promise<void> {
  const sop = async (name: string, toml: string, md: string) => {
    await mkdir(join(home, 'sops', name), { recursive: true })
    await writeFile(join(home, 'sops', name, 'SOP.toml'), toml)
    await writeFile(join(home, 'sops', name, 'SOP.md'), `# ${name}\n\n## Steps\n\n${md}`)
  }
  await sop(
    'answer',
    `${SOP('answer', 'in/+')}condition = "$.v >= 10"\n`,
    '1. **Answer**\n   - call: {"tool":"mqtt_publish","args":{"topic":"out/{{trigger.seq}}","payload":"{{trigger}}","qos":1}}\n   - terminal: true\n',
  )
  await sop(
    'gated',
    SOP('gated', 'gate/+'),
    '1. **Go** — a person says so first.\n   - kind: checkpoint\n   - prompt: go on?\n   - call: {"tool":"mqtt_publish","args":{"topic":"gated/done","payload":"{{trigger}}","qos":1}}\n   - terminal: true\n',
  )
  // A board the hub does not have: the step fails, and with it the run.
  await sop(
    'broken',
    SOP('broken', 'broken/+'),
    '1. **Poke a board that is not there**\n   - call: {"tool":"board_send","args":{"board":"ghost","cmd":"ping","args":{}}}\n   - terminal: true\n',
  )
  await sop(
    'attest',
    SOP('attest', 'att/+'),
    '1. **Attest**\n   - call: {"tool":"chain_attest","args":{"action":"metrics.test","request_uri":"svc://metrics/{{trigger.seq}}","params":{"seq":"{{trigger.seq}}"}}}\n   - terminal: true\n',
  )
}

async function writeHome(home: string, port: number, extra = ''): Promise<void> {
  await writeSops(home)
  await writeFile(
    join(home, 'hub.toml'),
    `[hub]\nsops_dir = "${join(home, 'sops')}"\n[broker]\nport = ${port}\n[webhook]\nenabled = false\n[api]\nport = 0\n[console]\nenabled = false\n` +
      `[[boards]]\nname = "vend1"\nport = "/sim/metrics-vend1"\nsimulate = true\nheartbeat_ms = 0\n${extra}`,
  )
}

interface Api {
  url: string
  token: string
}

async function apiOf(home: string): Promise<Api> {
  const info = JSON.parse(await readFile(join(home, 'hub-api.json'), 'utf8')) as { url: string }
  return { url: info.url, token: (await readFile(join(home, 'hub.token'), 'utf8')).trim() }
}

async function call(api: Api, method: string, path: string, body?: unknown): Promise<unknown> {
  const r = await fetch(api.url + path, {
    method,
    headers: {
      authorization: `Bearer ${api.token}`,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  })
  if (!r.ok) throw new Error(`${method} ${path}: ${r.status} ${await r.text()}`)
  return r.json()
}

/** GET /metrics read strictly; anything but a 200 with a valid exposition throws. */
async function read(api: Api): Promise<Exposition> {
  const r = await fetch(`${api.url}/metrics`, { headers: { authorization: `Bearer ${api.token}` } })
  if (r.status !== 200) throw new Error(`GET /metrics: ${r.status} ${await r.text()}`)
  return parseExposition(await r.text())
}

async function scrape(t: Test, api: Api): Promise<Exposition> {
  const r = await fetch(`${api.url}/metrics`, { headers: { authorization: `Bearer ${api.token}` } })
  t.equal(r.status, 200, 'GET /metrics answers 200')
  t.match(r.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/)
  return parseExposition(await r.text())
}

/** Counters never go back between two scrapes of one process. */
function countersMonotonic(t: Test, before: Exposition, after: Exposition, what: string): void {
  const back: string[] = []
  for (const f of after.families.values()) {
    if (f.type !== 'counter') continue
    for (const s of f.samples) {
      const was = before.get(s.name, s.labels)
      if (was !== undefined && s.value < was)
        back.push(`${s.name}${JSON.stringify(s.labels)} ${was} → ${s.value}`)
    }
  }
  t.same(back, [], `no counter went back (${what})`)
}

const delta = (a: Exposition, b: Exposition, name: string, labels: Labels) =>
  (b.get(name, labels) ?? 0) - (a.get(name, labels) ?? 0)

async function runsIn(api: Api, sop: string, state: string): Promise<number> {
  const r = (await call(api, 'GET', `/sop/runs?sop=${sop}&state=${state}&limit=1000`)) as { runs: unknown[] }
  return r.runs.length
}

t.test('GET /metrics during and after real runs over MQTT', async (t) => {
  const home = await tempDir(t)
  const port = await freePort()
  await writeHome(home, port)
  await startHubChild(t, home)
  const api = await apiOf(home)

  // The route is the local API's: its bearer token, like every route there.
  const bare = await fetch(`${api.url}/metrics`)
  t.equal(bare.status, 401, 'no token: refused')
  const wrong = await fetch(`${api.url}/metrics`, { headers: { authorization: `Bearer ${'0'.repeat(64)}` } })
  t.equal(wrong.status, 401, 'a wrong token: refused')
  const inUrl = await fetch(`${api.url}/metrics?token=${api.token}`)
  t.equal(inUrl.status, 401, 'the token in the URL: refused')

  // A simulated board says hello and goes online.
  await scrape(t, api)
  const m0 = await waitFor(async () => {
    const m = await read(api)
    return m.get('svc_board_available', { board: 'vend1' }) === 1 ? m : null
  }, 'the simulated board online')
  t.equal(m0.get('svc_board_state', { board: 'vend1', state: 'online' }), 1)
  t.equal(m0.get('svc_board_state', { board: 'vend1', state: 'offline' }), 0)
  t.ok((m0.get('svc_board_hellos_total', { board: 'vend1' }) ?? 0) >= 1, 'its hello was counted')
  t.equal(
    m0.get('svc_hub_info', {
      version: m0.samples('svc_hub_info')[0]?.labels.version ?? '',
      broker: 'embedded',
    }),
    1,
  )
  t.equal(m0.get('svc_sops_loaded'), 4)
  t.equal(m0.get('svc_mqtt_session_connected'), 1)
  t.ok((m0.get('svc_broker_clients_connected') ?? 0) >= 1, "the hub's own sessions are clients of its broker")
  for (const sop of ['answer', 'gated', 'broken', 'attest'])
    t.equal(m0.get('svc_runs_started_total', { sop }), 0, `a series for ${sop} before its first run`)
  t.ok((m0.get('svc_store_size_bytes', { store: 'engine' }) ?? 0) > 0, 'the engine store has bytes on disk')
  t.ok((m0.get('svc_data_filesystem_avail_bytes') ?? 0) > 0, 'free space on the data filesystem')
  if (process.platform === 'linux')
    t.ok((m0.get('svc_process_disk_written_bytes_total') ?? -1) >= 0, '/proc/self/io is read')
  for (const name of [
    'process_resident_memory_bytes',
    'nodejs_heap_size_used_bytes',
    'nodejs_eventloop_lag_seconds',
  ])
    t.ok(m0.families.has(name), `prom-client's default ${name}`)

  const sub = await mqtt.connectAsync(`mqtt://127.0.0.1:${port}`, { reconnectPeriod: 0 })
  const pub = await mqtt.connectAsync(`mqtt://127.0.0.1:${port}`, { reconnectPeriod: 0 })
  t.teardown(async () => {
    await sub.endAsync(true)
    await pub.endAsync(true)
  })
  let answers = 0
  sub.on('message', () => answers++)
  await sub.subscribeAsync('out/+', { qos: 1 })
  // 20 events, of which 10 pass the condition; 4 runs park at a checkpoint; 3 fail; 3 attest.
  for (let i = 0; i < 20; i++)
    await pub.publishAsync(`in/${i}`, `{"seq":${i},"v":${i % 2 ? 10 : 0}}`, { qos: 1 })
  for (let i = 0; i < 4; i++) await pub.publishAsync(`gate/${i}`, `{"seq":${i}}`, { qos: 1 })
  for (let i = 0; i < 3; i++) await pub.publishAsync(`broken/${i}`, `{"seq":${i}}`, { qos: 1 })
  for (let i = 0; i < 3; i++) await pub.publishAsync(`att/${i}`, `{"seq":${i}}`, { qos: 1 })
  await waitFor(() => answers >= 10, 'the answers')
  // A run is counted once its final record is durable, which may come a few ms after the run
  // history already shows it finished: wait for the counts themselves.
  const finished = (m: Exposition, sop: string, state: string) =>
    m.get('svc_runs_finished_total', { sop, state }) ?? 0
  const m1 = await waitFor(async () => {
    const m = await read(api)
    const done =
      finished(m, 'answer', 'completed') >= 10 &&
      finished(m, 'broken', 'failed') >= 3 &&
      finished(m, 'attest', 'completed') >= 3 &&
      (m.get('svc_runs_unfinished', { sop: 'gated', state: 'waiting_approval' }) ?? 0) >= 4
    return done ? m : null
  }, 'the runs over MQTT counted')

  // During: four runs wait at their checkpoint.
  countersMonotonic(t, m0, m1, 'before → during')
  t.equal(
    delta(m0, m1, 'svc_trigger_events_total', { kind: 'mqtt', outcome: 'started' }),
    20,
    'one event counted per run started (the 10 that failed the condition never reached admission)',
  )
  t.same(
    ['answer', 'gated', 'broken', 'attest'].map((sop) => delta(m0, m1, 'svc_runs_started_total', { sop })),
    [10, 4, 3, 3],
    'runs started per SOP',
  )
  t.equal(delta(m0, m1, 'svc_runs_finished_total', { sop: 'answer', state: 'completed' }), 10)
  t.equal(delta(m0, m1, 'svc_runs_finished_total', { sop: 'broken', state: 'failed' }), 3)
  t.equal(delta(m0, m1, 'svc_runs_finished_total', { sop: 'attest', state: 'completed' }), 3)
  t.equal(
    m1.get('svc_runs_finished_total', { sop: 'gated', state: 'completed' }),
    0,
    'no gated run finished yet',
  )
  t.equal(
    m1.get('svc_runs_unfinished', { sop: 'gated', state: 'waiting_approval' }),
    4,
    'four runs at the checkpoint',
  )
  t.equal(m1.get('svc_runs_unfinished', { sop: 'answer', state: 'running' }), 0)
  t.equal(m1.get('svc_approvals_pending', { sop: 'gated' }), 4)
  t.ok(
    (m1.get('svc_approvals_oldest_age_seconds', { sop: 'gated' }) ?? -1) >= 0,
    'the oldest approval has an age',
  )
  t.equal(
    m1.get('svc_approvals_oldest_age_seconds', { sop: 'answer' }),
    undefined,
    'none for a SOP with nothing waiting',
  )
  t.equal(m1.get('svc_triggers_kept', { sop: 'gated', kind: 'held' }), 0)
  t.equal(
    m1.get('svc_attest_lines', { state: 'pending' }),
    3,
    'three lines wait for a sync (none configured)',
  )
  t.ok((m1.get('svc_attest_oldest_unsynced_age_seconds') ?? 0) > 0, 'the oldest unsynced line has an age')
  t.equal(m1.get('svc_attest_sync_state', { state: 'idle' }), undefined, 'no sync state without [chain] sync')
  t.ok((m1.get('svc_run_history_span_seconds') ?? 0) > 0, 'the history goes back to the first run')
  t.ok((m1.get('svc_store_size_bytes', { store: 'attest' }) ?? 0) > 0, 'the attestation store is a store')
  t.equal(m1.get('svc_mqtt_trigger_in_flight'), 0, 'every event admitted')
  t.ok((m1.get('svc_mqtt_trigger_in_flight_peak') ?? 0) >= 1)
  t.ok(
    (m1.get('svc_broker_messages_total') ?? 0) > (m0.get('svc_broker_messages_total') ?? 0),
    'the broker routed the events',
  )

  // Approve two, deny one: the runs by state move, and agree with the run history.
  const pending = ((await call(api, 'GET', '/sop/pending')) as { runs: { id: string }[] }).runs
  await call(api, 'POST', `/sop/runs/${pending[0]?.id}/approve`, {})
  await call(api, 'POST', `/sop/runs/${pending[1]?.id}/approve`, {})
  await call(api, 'POST', `/sop/runs/${pending[2]?.id}/deny`, {})
  const m2 = await waitFor(async () => {
    const m = await read(api)
    return finished(m, 'gated', 'completed') >= 2 && finished(m, 'gated', 'cancelled') >= 1 ? m : null
  }, 'the approved and denied runs counted')
  countersMonotonic(t, m1, m2, 'during → after')
  t.equal(m2.get('svc_runs_unfinished', { sop: 'gated', state: 'waiting_approval' }), 1)
  t.equal(m2.get('svc_approvals_pending', { sop: 'gated' }), 1)
  t.equal(
    delta(m1, m2, 'svc_trigger_events_total', { kind: 'mqtt', outcome: 'started' }),
    0,
    'approvals are not events',
  )
  for (const sop of ['answer', 'gated', 'broken', 'attest'])
    for (const state of ['completed', 'failed', 'cancelled'])
      t.equal(
        m2.get('svc_runs_finished_total', { sop, state }),
        await runsIn(api, sop, state),
        `${sop} ${state}: the counter agrees with the run history`,
      )
  t.equal(
    m2.get('svc_runs_unfinished', { sop: 'gated', state: 'waiting_approval' }),
    await runsIn(api, 'gated', 'waiting_approval'),
  )
  const ev = (m: Exposition) => m.get('svc_board_events_total', { board: 'vend1' }) ?? 0
  const published = m2.get('svc_board_events_published_total', { board: 'vend1' }) ?? 0
  t.ok(published <= ev(m2), 'a board event is published only once accepted')
  t.equal(m2.get('svc_board_available', { board: 'vend1' }), 1, 'the board is still online')
  t.equal(m2.samples('svc_board_available').length, 1, 'one series per configured board')

  // The starter dashboard asks only for what a hub serves (`up` is Prometheus' own).
  const dashboard = JSON.parse(await readFile(join(root, 'hub/metrics/grafana-dashboard.json'), 'utf8')) as {
    panels: { title: string; targets?: { expr: string }[] }[]
  }
  const asked = new Set(
    dashboard.panels.flatMap((p) =>
      (p.targets ?? []).flatMap((q) =>
        [...q.expr.matchAll(/([a-z_:][a-z0-9_:]*)\{/g)].map((m) => m[1] as string),
      ),
    ),
  )
  asked.delete('up')
  t.ok(asked.size > 20, `${asked.size} metrics on the dashboard`)
  t.same(
    [...asked].filter((n) => !m2.families.has(n)),
    [],
    'every metric the dashboard queries is served',
  )
})

t.test('[metrics] listener beyond loopback: the bearer token in the header, nowhere else', async (t) => {
  const home = await tempDir(t)
  const port = await freePort()
  const mport = await freePort()
  const token = 'a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6'
  const file = join(home, 'metrics.token')
  await writeFile(file, `${token}\n`, { mode: 0o600 })
  await writeHome(home, port, `[metrics]\nhost = "0.0.0.0"\nport = ${mport}\ntoken_file = "${file}"\n`)
  const hub = await startHubChild(t, home)
  t.match(hub.out(), /"metrics listening"/)
  const hosts = ['127.0.0.1']
  // An address of this machine beyond loopback, when it has one: what a Prometheus on the LAN uses.
  const lan = Object.values(networkInterfaces())
    .flat()
    .find((a) => a && a.family === 'IPv4' && !a.internal)?.address
  if (lan) hosts.push(lan)
  else t.comment('no non-loopback IPv4 address here: the listener is checked through 127.0.0.1 only')
  for (const host of hosts) {
    const url = `http://${host}:${mport}/metrics`
    const none = await fetch(url)
    t.equal(none.status, 401, `${host}: no token, refused`)
    t.match(none.headers.get('www-authenticate') ?? '', /^Bearer realm=/)
    t.equal((await fetch(`${url}?token=${token}`)).status, 401, `${host}: the token in the URL, refused`)
    t.equal(
      (await fetch(url, { headers: { authorization: `Basic ${token}` } })).status,
      401,
      `${host}: another scheme, refused`,
    )
    t.equal(
      (await fetch(url, { headers: { authorization: `Bearer ${token.slice(0, -1)}0` } })).status,
      401,
      `${host}: a wrong token, refused`,
    )
    const ok = await fetch(url, { headers: { authorization: `Bearer ${token}` } })
    t.equal(ok.status, 200, `${host}: the token, served`)
    const m = parseExposition(await ok.text())
    t.equal(m.get('svc_sops_loaded'), 4)
  }
  const base = `http://127.0.0.1:${mport}`
  t.equal(
    (await fetch(`${base}/metrics`, { method: 'POST', headers: { authorization: `Bearer ${token}` } }))
      .status,
    405,
  )
  t.equal(
    (await fetch(`${base}/sop/pending`, { headers: { authorization: `Bearer ${token}` } })).status,
    404,
    'nothing else is served',
  )
  // A replaced token works, the old one stops, within the re-read interval.
  const next = 'f'.repeat(40)
  await writeFile(file, next, { mode: 0o600 })
  await waitFor(
    async () =>
      (await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${next}` } })).status === 200,
    'the new token',
    { intervalMs: 200 },
  )
  t.equal(
    (await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${token}` } })).status,
    401,
    'the old token no longer works',
  )
  // Bytes that are not HTTP, and a header past Node's limit: answered 400/431, nothing else.
  for (const junk of [
    'NOT HTTP AT ALL\r\n\r\n',
    `GET /metrics HTTP/1.1\r\nX: ${'a'.repeat(20_000)}\r\n\r\n`,
  ]) {
    const answer = await new Promise<string>((resolve, reject) => {
      const sock = connect(mport, '127.0.0.1', () => sock.end(junk))
      let got = ''
      sock.on('data', (d) => (got += d.toString()))
      sock.on('close', () => resolve(got))
      sock.on('error', reject)
    })
    t.match(answer, /^HTTP\/1\.1 4(00|31) /, 'refused by the HTTP parser')
  }
  t.equal(
    (await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${next}` } })).status,
    200,
    'still serving',
  )
  t.equal(hub.proc.exitCode, null, 'the hub kept running through every refusal')
})

t.test(
  'on an external broker: no embedded-broker families, the session and its events counted',
  { skip: noMosquitto },
  async (t) => {
    const mosq = await startMosquitto(t)
    const home = await tempDir(t)
    await writeSops(home)
    await writeFile(
      join(home, 'hub.toml'),
      `[hub]\nsops_dir = "${join(home, 'sops')}"\n[broker]\nurl = "${mosq.url}"\nclient_id = "metrics-hub"\n[webhook]\nenabled = false\n[api]\nport = 0\n[console]\nenabled = false\n`,
    )
    await startHubChild(t, home)
    const api = await apiOf(home)
    const m0 = await scrape(t, api)
    t.equal(m0.samples('svc_hub_info')[0]?.labels.broker, 'external')
    t.equal(m0.get('svc_mqtt_session_connected'), 1)
    t.same(
      [...m0.families.keys()].filter((n) => n.startsWith('svc_broker_') || n.startsWith('svc_board')),
      [],
      'no broker or board families without an embedded broker or boards',
    )
    const sub = await mqtt.connectAsync(mosq.url, { reconnectPeriod: 0 })
    const pub = await mqtt.connectAsync(mosq.url, { reconnectPeriod: 0 })
    t.teardown(async () => {
      await sub.endAsync(true)
      await pub.endAsync(true)
    })
    let answers = 0
    sub.on('message', () => answers++)
    await sub.subscribeAsync('out/+', { qos: 1 })
    for (let i = 0; i < 6; i++) await pub.publishAsync(`in/${i}`, `{"seq":${i},"v":10}`, { qos: 1 })
    await waitFor(() => answers >= 6, 'the answers')
    const m1 = await waitFor(async () => {
      const m = await read(api)
      return (m.get('svc_runs_finished_total', { sop: 'answer', state: 'completed' }) ?? 0) >= 6 ? m : null
    }, 'the runs counted')
    t.equal(delta(m0, m1, 'svc_trigger_events_total', { kind: 'mqtt', outcome: 'started' }), 6)
    t.equal(m1.get('svc_runs_finished_total', { sop: 'answer', state: 'completed' }), 6)
  },
)

t.test('[metrics] on loopback without a token; the start refuses what would leak', async (t) => {
  const home = await tempDir(t)
  const env = { ...process.env, SVC_HOME: home }
  await writeSops(home)
  const base = {
    hub: { sops_dir: join(home, 'sops'), data_dir: join(home, 'data'), log_level: 'silent' },
    broker: { port: 0 },
    api: { port: 0 },
    console: { enabled: false },
    webhook: { enabled: false },
  }
  const bad = (metrics: object) => {
    const r = resolveConfig({ ...base, metrics }, '/etc/svc/hub.toml', env)
    return r.ok ? 'accepted' : r.error
  }
  t.match(
    bad({ host: '0.0.0.0', port: 9786 }),
    /hub\.toml: metrics\.host = "0\.0\.0\.0" is not a loopback address: .*metrics\.token_file/,
  )
  t.match(bad({ host: '192.168.1.5', port: 9786 }), /metrics\.token_file/)
  t.match(bad({ token_file: 'x' }), /metrics\.token_file applies only with metrics\.port/)
  t.match(bad({ port: 70000 }), /metrics\.port/)
  t.match(bad({ path: '/m' }), /metrics\.path: unknown field/)
  t.equal(bad({ host: '::1', port: 0 }), 'accepted', 'loopback needs no token')

  // A token file others can read stops the start, naming the field and the fix.
  const file = join(home, 'metrics.token')
  await writeFile(file, 'b'.repeat(32))
  await chmod(file, 0o644)
  const loose = resolveConfig({ ...base, metrics: { host: '0.0.0.0', port: 0, token_file: file } }, null, env)
  if (!loose.ok) throw new Error(loose.error)
  await t.rejects(
    startHub(loose.config, silentLog, realParts(env, loose.config)),
    /metrics\.token_file: .*mode 0644.*chmod 600/,
  )
  await writeFile(join(home, 'short.token'), 'abc', { mode: 0o600 })
  const short = resolveConfig(
    { ...base, metrics: { host: '0.0.0.0', port: 0, token_file: join(home, 'short.token') } },
    null,
    env,
  )
  if (!short.ok) throw new Error(short.error)
  await t.rejects(
    startHub(short.config, silentLog, realParts(env, short.config)),
    /metrics\.token_file: .* 16 or more characters/,
  )

  const mport = await freePort()
  const open = resolveConfig({ ...base, metrics: { port: mport } }, null, env)
  if (!open.ok) throw new Error(open.error)
  t.equal(open.config.metrics.host, '127.0.0.1', 'loopback by default')
  const hub = await startHub(open.config, silentLog, realParts(env, open.config))
  t.teardown(() => hub.close())
  const r = await fetch(`http://127.0.0.1:${mport}/metrics`)
  t.equal(r.status, 200, 'served without a token on loopback')
  t.equal(parseExposition(await r.text()).get('svc_sops_loaded'), 4)
})

t.test('/proc/self/io is read for its storage bytes, and nothing else passes for it', async (t) => {
  t.same(
    parseProcIo(
      'rchar: 10\nwchar: 20\nsyscr: 1\nsyscw: 2\nread_bytes: 4096\nwrite_bytes: 8192\ncancelled_write_bytes: 0\n',
    ),
    {
      readBytes: 4096,
      writeBytes: 8192,
    },
  )
  t.equal(parseProcIo('rchar: 10\nwchar: 20\n'), null)
  t.equal(parseProcIo(''), null)
})

t.test('every family is named as Prometheus asks: svc_, units, _total for counters only, once', async (t) => {
  const all = families({
    broker: true,
    mqtt: true,
    bridge: true,
    attest: true,
    attestSync: true,
    filesystem: true,
    io: true,
  })
  const names = all.map((f) => f.name)
  t.same(
    names.filter((n, i) => names.indexOf(n) !== i),
    [],
    'no name twice',
  )
  for (const f of all) {
    t.match(f.name, /^svc_[a-z0-9_]+$/, `${f.name}: svc_ and snake_case`)
    t.equal(f.name.endsWith('_total'), f.type === 'counter', `${f.name}: _total if and only if a counter`)
    const words = f.name.split('_')
    if (['age', 'span', 'busy', 'timestamp'].some((w) => words.includes(w)))
      t.match(f.name, /_seconds$/, `${f.name}: a time in seconds`)
    if (['size', 'avail', 'bytes'].some((w) => words.includes(w)))
      t.match(f.name, /_bytes(_total)?$/, `${f.name}: a size in bytes`)
    for (const l of f.labels)
      t.ok(
        ['sop', 'board', 'state', 'kind', 'outcome', 'store', 'version', 'broker'].includes(l),
        `${f.name}: label ${l} is a bounded one`,
      )
    t.ok(f.help.length > 10, `${f.name}: says what it is`)
  }
})
