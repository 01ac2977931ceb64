// svc beside Node-RED on the same event work (`npm run bench -- peer`). The work: an MQTT event
// `in/<n>` `{"seq":n,"v":…}`, a condition `v >= 10`, and a QoS 1 publish `out/<n>`.
//   svc:      a SOP with an mqtt trigger (condition `$.v >= 10`) and one mqtt_publish step, auto
//             mode, runs durable (`svc hub`, a child process started the way users start it)
//   Node-RED: mqtt-in → switch → change → mqtt-out (bench/peer/flow.json), headless, its own
//             userDir in a temp folder, a child process stopped by pid
// Both on one Mosquitto (bench/peer: the config the hub's README recommends, TCP_NODELAY on),
// driven by the same two clients; svc is also run on its own embedded broker (its default).
// Rounds alternate the systems. Each round prints:
//   events/s   20,000 events published at once (QoS 1), until the last expected out/<n> arrives;
//              every expected output must arrive (none lost) and arrive once
//   p50/p99    one event at a time: publish in/<n>, wait for out/<n>
//   CPU        user+system of the system's process(es) over the 20,000 events (Mosquitto's own
//              CPU beside it when the system uses it), and per event at 10 events/s (PEER_PACED
//              events, default 100, each answered) against the burst's per event (half the
//              burst's events fail the condition; the paced ones all pass)
//   RSS        idle after start, and after the burst
//   floor      the disk's fsync p50 in the same temp folder (bench/disk-floor.ts), once a round
// and at the end, from the medians, `events/s svc/node-red: <x>x` and the aim for a hub whose runs
// are durable (bench/README.md, the table's `peer` row): events/s at least 0.8x Node-RED's, and
// p50 at most Node-RED's p50 plus the floor.
// PEER_EVENTS, PEER_ROUNDS and PEER_SYSTEMS (comma list of svc,svc-embedded,node-red) narrow it;
// PEER_MOSQUITTO_DEFAULTS=1 runs Mosquitto with its default queue limits; PEER_PROFILE=<dir>
// writes the hub's CPU profile there; PEER_THREADS=1 prints each system's burst CPU by thread;
// PEER_NODE_ARGS passes node flags to the hub (e.g. "--max-semi-space-size=1", as the systemd unit);
// PEER_HUB=dist runs the hub bundled, as the systemd unit does (default: through tsx, as `npm start`);
// PEER_WARMUP=<n> sends every system n events first, unmeasured, so the burst meets JIT-compiled
// code as a long-running process would (default 0: each round measures a fresh process).
import { spawn, spawnSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { cpus, tmpdir } from 'node:os'
import { fsyncFloor } from './disk-floor.ts'
import { loadAverages } from './load.ts'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import mqtt, { type MqttClient } from 'mqtt'
import { buildDist } from '../cli/build/dist.ts'
import { withNoDelay } from '../hub/broker/no-delay.ts'
import { freePort } from '../test/helpers/ports.ts'
import { cpuSecOf, rssOf, startHub, statCpuSec, stopChild } from './hub-process.ts'

const root = fileURLToPath(new URL('..', import.meta.url))
const here = join(root, 'bench', 'peer')
const EVENTS = Number(process.env.PEER_EVENTS ?? 20_000)
const ROUNDS = Number(process.env.PEER_ROUNDS ?? 3)
const SAMPLES = 200
const PACED = Number(process.env.PEER_PACED ?? 100)
const SYSTEMS = (process.env.PEER_SYSTEMS ?? 'svc,node-red,svc-embedded').split(',')
const MOSQUITTO = ['/usr/sbin/mosquitto', 'mosquitto'].find((b) => spawnSync(b, ['-h']).error === undefined)

type SystemName = 'svc' | 'svc-embedded' | 'node-red'

interface Running {
  brokerUrl: string
  pids: number[]
  stop(): Promise<void>
}

interface Round {
  system: SystemName
  eventsPerSec: number
  lost: number
  repeated: number
  p50: number
  p99: number
  cpuSec: number
  /** CPU ms per event at 10 events/s (PACED events). */
  pacedCpuMs: number
  brokerCpuSec: number
  idleRss: number
  busyRss: number
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN
}
const median = (xs: number[]): number => pct(xs, 50)

/** CPU seconds by thread (/proc/<pid>/task/<tid>), for PEER_THREADS=1: the main thread apart from V8 and libuv helpers. */
function threadCpuOf(pid: number): Map<string, number> {
  const out = new Map<string, number>()
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const name = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim()
      const k = tid === String(pid) ? `${name} (main)` : `${name} ${tid}`
      out.set(k, (out.get(k) ?? 0) + statCpuSec(`/proc/${pid}/task/${tid}/stat`))
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return out
}

/** One Mosquitto for the whole bench, with the settings hub/README.md asks of an external broker. */
async function startMosquitto(
  dir: string,
): Promise<{ url: string; port: number; pid: number; stop(): Promise<void> }> {
  if (!MOSQUITTO) throw new Error('mosquitto is not installed (apt-get install mosquitto)')
  const port = await freePort()
  const conf = join(dir, 'mosquitto.conf')
  await writeFile(
    conf,
    [
      `listener ${port} 127.0.0.1`,
      'allow_anonymous true',
      'persistence false',
      'set_tcp_nodelay true',
      // hub/README.md, "Falling behind an external broker": a queue deep enough for a burst, and a window
      // wide enough that one sync batch acknowledges many messages. PEER_MOSQUITTO_DEFAULTS=1
      // leaves Mosquitto's defaults (1000 queued, 20 in flight) to show what they cost.
      ...(process.env.PEER_MOSQUITTO_DEFAULTS
        ? []
        : ['max_queued_messages 100000', 'max_inflight_messages 1000']),
      '',
    ].join('\n'),
  )
  const proc = spawn(MOSQUITTO, ['-c', conf], { stdio: ['ignore', 'ignore', 'pipe'] })
  for (let i = 0; i < 200; i++) {
    const ok = await mqtt
      .connectAsync(`mqtt://127.0.0.1:${port}`, { reconnectPeriod: 0, connectTimeout: 500 })
      .then(async (c) => {
        await c.endAsync(true)
        return true
      })
      .catch(() => false)
    if (ok) break
    await sleep(25)
  }
  return { url: `mqtt://127.0.0.1:${port}`, port, pid: proc.pid as number, stop: () => stopChild(proc) }
}

/** Ends a persistent session on the broker (connect with clean: true), so no round queues for the next. */
async function wipeSession(url: string, clientId: string): Promise<void> {
  const c = await mqtt.connectAsync(url, { clientId, clean: true, reconnectPeriod: 0 }).catch(() => null)
  await c?.endAsync(true)
}

let sessions = 0

async function startSvc(dir: string, brokerUrl: string | null): Promise<Running> {
  const clientId = `svc-peer-${process.pid}-${++sessions}`
  // Out of the box: the CLI as users start it, its default log level.
  // PEER_PROFILE=<dir>: the hub writes a V8 CPU profile there when it stops (node --cpu-prof).
  const prof = process.env.PEER_PROFILE ? ['--cpu-prof', '--cpu-prof-dir', process.env.PEER_PROFILE] : []
  const extra = process.env.PEER_NODE_ARGS?.split(' ').filter(Boolean) ?? []
  const hub = await startHub({ dir, clientId, brokerUrl, nodeArgs: [...prof, ...extra], entry: distEntry })
  return {
    brokerUrl: hub.brokerUrl,
    pids: [hub.pid],
    async stop() {
      await hub.stop()
      if (brokerUrl) await wipeSession(brokerUrl, clientId)
    },
  }
}

async function startNodeRed(dir: string, brokerPort: number, brokerUrl: string): Promise<Running> {
  const userDir = await mkdtemp(join(dir, 'node-red-'))
  const clientId = `nodered-peer-${process.pid}-${++sessions}`
  const flow = (await readFile(join(here, 'flow.json'), 'utf8'))
    .replace('"__PORT__"', `"${brokerPort}"`)
    .replace('"nodered-peer"', `"${clientId}"`)
  await writeFile(join(userDir, 'flows.json'), flow)
  const port = await freePort()
  const child = spawn(
    process.execPath,
    [
      '-r',
      join(here, 'nodelay.cjs'),
      join(root, 'node_modules/node-red/red.js'),
      '--userDir',
      userDir,
      '--settings',
      join(here, 'settings.cjs'),
      '--port',
      String(port),
      join(userDir, 'flows.json'),
    ],
    { cwd: userDir, stdio: ['ignore', 'pipe', 'inherit'] },
  )
  child.stdout?.resume()
  return {
    brokerUrl,
    pids: [child.pid as number],
    async stop() {
      await stopChild(child)
      await wipeSession(brokerUrl, clientId)
    },
  }
}

async function clients(url: string): Promise<{ pub: MqttClient; sub: MqttClient }> {
  const opts = { reconnectPeriod: 0, clean: true }
  const pub = await mqtt.connectAsync(url, { ...opts, clientId: `peer-pub-${process.pid}` })
  const sub = await mqtt.connectAsync(url, { ...opts, clientId: `peer-sub-${process.pid}` })
  withNoDelay(pub)
  withNoDelay(sub)
  await sub.subscribeAsync('out/+', { qos: 1 })
  return { pub, sub }
}

async function round(
  system: SystemName,
  dir: string,
  broker: { url: string; port: number; pid: number },
  base: number,
): Promise<Round> {
  const running =
    system === 'node-red'
      ? await startNodeRed(dir, broker.port, broker.url)
      : await startSvc(dir, system === 'svc' ? broker.url : null)
  const usesMosquitto = system !== 'svc-embedded'
  const { pub, sub } = await clients(running.brokerUrl)
  const seen = new Map<number, number>()
  let waiting: { seq: number; resolve: () => void } | undefined
  let onCount: (() => void) | undefined
  sub.on('message', (topic) => {
    const seq = Number(topic.slice(4))
    seen.set(seq, (seen.get(seq) ?? 0) + 1)
    if (waiting && waiting.seq === seq) waiting.resolve()
    onCount?.()
  })
  const one = async (seq: number, v: number): Promise<number> => {
    const got = new Promise<void>((resolve) => (waiting = { seq, resolve }))
    const t0 = performance.now()
    await pub.publishAsync(`in/${seq}`, `{"seq":${seq},"v":${v}}`, { qos: 1 })
    await got
    return performance.now() - t0
  }
  try {
    // Ready: the system answers (its subscription is in place).
    for (let tries = 0; ; tries++) {
      const seq = base - 1 - tries
      const ok = await Promise.race([one(seq, 10).then(() => true), sleep(500).then(() => false)])
      if (ok) break
      if (tries > 120) throw new Error(`${system} never answered`)
    }
    // A warm-up burst, not measured (PEER_WARMUP events): the JIT compiles the hot paths of a
    // fresh process during its first thousands of events, in every system alike.
    const warm = Number(process.env.PEER_WARMUP ?? 0)
    if (warm > 0) {
      const from = base - 200_000
      let want = 0
      const acks: Promise<unknown>[] = []
      for (let i = 0; i < warm; i++) {
        if (i % 20 >= 10) want++
        acks.push(pub.publishAsync(`in/${from + i}`, `{"seq":${from + i},"v":${i % 20}}`, { qos: 1 }))
      }
      await Promise.all(acks)
      for (let tries = 0; tries < 300; tries++) {
        let n = 0
        for (let i = 0; i < warm; i++) if (seen.has(from + i)) n++
        if (n >= want) break
        await sleep(100)
      }
    }
    await sleep(1000)
    const idleRss = running.pids.reduce((s, p) => s + rssOf(p), 0)
    const lat: number[] = []
    for (let i = 0; i < SAMPLES + 20; i++) {
      const ms = await one(base + i, 10 + (i % 10))
      if (i >= 20) lat.push(ms)
    }
    // At a site's pace: PACED events 100 ms apart, each answered; the CPU per event against the
    // burst's, in the same system (a lone event pays for its own write, wake-ups and cold caches).
    const pacedCpu0 = running.pids.reduce((s, p) => s + cpuSecOf(p), 0)
    for (let i = 0; i < PACED; i++) {
      const t = performance.now()
      await one(base + SAMPLES + 20 + i, 10 + (i % 10))
      await sleep(Math.max(0, 100 - (performance.now() - t)))
    }
    const pacedCpuMs = ((running.pids.reduce((s, p) => s + cpuSecOf(p), 0) - pacedCpu0) * 1000) / PACED
    // The burst: every event published at once; v = n % 20, so half pass the condition.
    const start = base + 1000
    let expected = 0
    for (let i = 0; i < EVENTS; i++) if (i % 20 >= 10) expected++
    const received = (): number => {
      let n = 0
      for (let i = 0; i < EVENTS; i++) if (seen.has(start + i)) n++
      return n
    }
    const cpu0 = running.pids.reduce((s, p) => s + cpuSecOf(p), 0)
    const threads0 = process.env.PEER_THREADS ? threadCpuOf(running.pids[0] as number) : undefined
    const bcpu0 = usesMosquitto ? cpuSecOf(broker.pid) : 0
    let count = 0
    const done = new Promise<void>((resolve) => {
      onCount = () => {
        if (++count >= expected) resolve()
      }
    })
    const t0 = performance.now()
    const acks: Promise<unknown>[] = []
    for (let i = 0; i < EVENTS; i++)
      acks.push(pub.publishAsync(`in/${start + i}`, `{"seq":${start + i},"v":${i % 20}}`, { qos: 1 }))
    // No progress for 15 s ends the wait: what has not arrived by then is lost.
    let last = -1
    for (;;) {
      const settled = await Promise.race([done.then(() => true), sleep(15_000).then(() => false)])
      if (settled || count === last) break
      last = count
    }
    const elapsed = performance.now() - t0
    await Promise.all(acks)
    await sleep(500) // repeats, if any, land after the last first delivery
    const cpuSec = running.pids.reduce((s, p) => s + cpuSecOf(p), 0) - cpu0
    const brokerCpuSec = usesMosquitto ? cpuSecOf(broker.pid) - bcpu0 : 0
    const busyRss = running.pids.reduce((s, p) => s + rssOf(p), 0)
    if (threads0) {
      const by = [...threadCpuOf(running.pids[0] as number)]
        .map(([name, sec]) => [name, sec - (threads0.get(name) ?? 0)] as const)
        .filter(([, sec]) => sec > 0)
        .sort((a, b) => b[1] - a[1])
      process.stdout.write(
        `${system} CPU by thread: ${by.map(([n, s]) => `${n} ${s.toFixed(2)} s`).join(', ')}\n`,
      )
    }
    let repeated = 0
    for (let i = 0; i < EVENTS; i++) repeated += Math.max(0, (seen.get(start + i) ?? 0) - 1)
    return {
      system,
      eventsPerSec: EVENTS / (elapsed / 1000),
      lost: expected - received(),
      repeated,
      p50: pct(lat, 50),
      p99: pct(lat, 99),
      cpuSec,
      pacedCpuMs,
      brokerCpuSec,
      idleRss,
      busyRss,
    }
  } finally {
    onCount = undefined
    await pub.endAsync(true)
    await sub.endAsync(true)
    await running.stop()
  }
}

const mb = (b: number): string => `${(b / 1024 / 1024).toFixed(0)} MB`

const dir = await mkdtemp(join(tmpdir(), 'svc-peer-bench-'))
// PEER_HUB=dist: the hub bundled as hub/svc-hub.service runs it (`npm run build`, bare node).
let distEntry: string | null = null
if (process.env.PEER_HUB === 'dist') {
  const built = await buildDist(join(dir, 'dist'))
  if (!built.ok) throw new Error(built.error)
  distEntry = built.entry
}
const broker = await startMosquitto(dir)
try {
  const rounds: Round[] = []
  process.stdout.write(
    `${EVENTS} events a burst, ${SAMPLES} one at a time; ${cpus().length} cores, load ${loadAverages()}\n`,
  )
  let base = 1_000_000
  const floors: number[] = []
  for (let r = 0; r < ROUNDS; r++) {
    const floor = fsyncFloor(dir, 500)
    floors.push(floor.p50)
    process.stdout.write(
      `round ${r + 1} floor        1 KiB append + fdatasync p50 ${floor.p50.toFixed(2)} ms  p99 ${floor.p99.toFixed(2)} ms\n`,
    )
    for (const system of SYSTEMS as SystemName[]) {
      const x = await round(system, dir, broker, base)
      base += EVENTS + 10_000
      rounds.push(x)
      process.stdout.write(
        `round ${r + 1} ${system.padEnd(12)} ${x.eventsPerSec.toFixed(0).padStart(6)} events/s (lost ${x.lost}, repeated ${x.repeated})  p50 ${x.p50.toFixed(2)} ms  p99 ${x.p99.toFixed(2)} ms  CPU ${x.cpuSec.toFixed(2)} s${x.brokerCpuSec ? ` (+ Mosquitto ${x.brokerCpuSec.toFixed(2)} s)` : ''}, per event ${((x.cpuSec / EVENTS) * 1000).toFixed(3)} ms burst, ${x.pacedCpuMs.toFixed(2)} ms at 10/s (${(x.pacedCpuMs / ((x.cpuSec / EVENTS) * 1000)).toFixed(1)}x)  RSS idle ${mb(x.idleRss)}, after ${mb(x.busyRss)}\n`,
      )
    }
  }
  const of = (s: SystemName) => rounds.filter((x) => x.system === s)
  for (const s of SYSTEMS as SystemName[]) {
    const xs = of(s)
    process.stdout.write(
      `median  ${s.padEnd(12)} ${median(xs.map((x) => x.eventsPerSec)).toFixed(0)} events/s  p50 ${median(xs.map((x) => x.p50)).toFixed(2)} ms  p99 ${median(xs.map((x) => x.p99)).toFixed(2)} ms  CPU ${median(xs.map((x) => x.cpuSec)).toFixed(2)} s (per event at 10/s over burst ${median(xs.map((x) => x.pacedCpuMs / ((x.cpuSec / EVENTS) * 1000))).toFixed(1)}x)  lost ${xs.reduce((a, x) => a + x.lost, 0)}\n`,
    )
  }
  const nr = of('node-red')
  if (nr.length > 0) {
    const nrRate = median(nr.map((x) => x.eventsPerSec))
    const nrP50 = median(nr.map((x) => x.p50))
    const floorP50 = median(floors)
    for (const s of ['svc', 'svc-embedded'] as const) {
      const xs = of(s)
      if (xs.length === 0) continue
      const label = s === 'svc' ? 'svc/node-red' : 'svc-embedded/node-red'
      process.stdout.write(
        `events/s ${label}: ${(median(xs.map((x) => x.eventsPerSec)) / nrRate).toFixed(2)}x  (p50 ${label}: ${(median(xs.map((x) => x.p50)) / nrP50).toFixed(2)}x)\n`,
      )
      const rate = median(xs.map((x) => x.eventsPerSec)) / nrRate
      const p50 = median(xs.map((x) => x.p50))
      const bound = nrP50 + floorP50
      process.stdout.write(
        `aim ${s}: events/s ${rate.toFixed(2)}x >= 0.8x ${rate >= 0.8 ? 'met' : 'not met'}; p50 ${p50.toFixed(2)} ms <= node-red ${nrP50.toFixed(2)} + fsync ${floorP50.toFixed(2)} = ${bound.toFixed(2)} ms ${p50 <= bound ? 'met' : 'not met'}\n`,
      )
    }
  }
} finally {
  await broker.stop()
  await rm(dir, { recursive: true, force: true })
}
