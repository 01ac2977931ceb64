// Endurance: what the whole `svc hub` process costs over a long life (`npm run bench -- endurance`;
// `ENDURANCE_EVENTS=20000 npm run bench -- endurance` for a quick run; ENDURANCE_NODE_ARGS, e.g.
// `--max-old-space-size=96`, are given to the main hub's node; ENDURANCE_COMMIT_WINDOW_MS sets its
// `[history] commit_window_ms`; ENDURANCE_DIR is the folder the hubs and the floor's file go in,
// e.g. on the SD card's file system, the temp folder otherwise; ENDURANCE_MALLOC=glibc keeps
// glibc's malloc where the unit would preload jemalloc). One hub, started as users
// start it (bench/hub-process.ts), with the allocator's environment the systemd unit gives it
// (hub/service/unit.ts `mallocEnvironment`), doing the peer work: an MQTT event `in/<n>`, a condition, one
// QoS 1 `mqtt_publish` step, auto mode, its embedded broker. Every event passes the condition, so
// every event is one stored run. The engine, the broker's persistence and the attestation store all
// live in that one process, so /proc/<pid> sees all of their writes:
//   disk      write_bytes and syscw deltas of /proc/<pid>/io per event, one event at a time (QoS 1,
//             each PUBACK awaited) at 1/s (300 events: LevelDB's share waits up to 10 × STAGE_MS
//             while events keep coming, so one such wait), 10/s (100) and 50/s (300), each over
//             its events and then over what they left to write (their once-only marks forgotten,
//             LevelDB's share once the hub is quiet), and in a burst of 20,000 published at once. write_bytes counts a page each time a
//             clean page is dirtied, so a small synced write costs 4 KiB; syscw counts
//             write(2)/writev(2) calls of any kind, sockets included (libuv writes TCP with
//             writev). Beside them: the disk's
//             floor (this process: a 1 KiB append + fdatasync in the same folder, /proc/self/io,
//             back to back and at 1/s) and the hub's own idle writes per second
//   CPU       utime+stime of /proc/<pid>/stat per event at 10/s and in the burst, and the main
//             thread's share (/proc/<pid>/task/<pid>/stat); the idle hub's
//   store     <data>/engine's size (all files, recursively) over the runs stored
//   RSS       VmRSS at 10,000, 100,000 and ENDURANCE_EVENTS (default 1,000,000) stored runs, 1 s
//             after the last events and settled (the hub gives back a burst's heap once quiet);
//             idle at 0; beside it the V8 heap (used, total) and external memory from the hub's
//             GET /metrics
//   rate      the median of three 20,000-event bursts from ENDURANCE_EVENTS stored runs over the
//             median of three from 10,000 (one burst over one moved the ratio by ±10% from run
//             to run)
// The store is filled in bursts of 20,000, and the bytes written over the whole fill per event
// printed (fill); a progress line goes to stderr every 50,000 runs. The rate's first bursts start
// at 10,000 runs, so a run with ENDURANCE_EVENTS under 70,000 ends at 130,000.
// Then a second hub with its own data folder and a short retention window (`[history]
// max_age_days = 0.0003`, about 26 s; `max_mb = 64`; `segment_mb = 0.25`) takes 1,000 events/s for
// ENDURANCE_RETENTION_SECONDS (default 120) while <data>/engine is sampled every 5 s: flat (within
// 10%) over the last half, or how much it grew. ENDURANCE_ONLY=retention runs that second hub alone
// (two minutes, where the whole bench takes half an hour).
import { closeSync, fdatasyncSync, openSync, readdirSync, readFileSync, statSync, writeSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import mqtt from 'mqtt'
import { withNoDelay } from '../hub/broker/no-delay.ts'
import { QUIET_MS } from '../hub/daemon/steps/memory.ts'
import { LAZY_MS } from '../hub/engine/group-commit.ts'
import { STAGE_MS } from '../hub/engine/store-context.ts'
import { FORGET_AFTER_MS } from '../hub/triggers/intake.ts'
import { findJemalloc } from '../hub/service/jemalloc.ts'
import { mallocEnvironment } from '../hub/service/unit.ts'
import { describeMount, mountOf } from './file-system.ts'
import { cpuSecOf, type HubProcess, rssOf, rssPartsOf, startHub, statCpuSec } from './hub-process.ts'
import { loadAverages, loadLine } from './load.ts'
import { freePort } from '../test/helpers/ports.ts'

const EVENTS = Number(process.env.ENDURANCE_EVENTS ?? 1_000_000)
const BURST = 20_000
/** Bursts measured back to back at the start and at the end, for the rate: their medians. */
const RATE_BURSTS = 3
const PACED = [
  { rate: 1, n: (10 * STAGE_MS) / 1000 },
  { rate: 10, n: 100 },
  { rate: 50, n: 300 },
] as const
const PACED_TOTAL = PACED.reduce((s, p) => s + p.n, 0)
const CHECKPOINTS = [...new Set([10_000, 100_000, 1_000_000, EVENTS])]
  .filter((c) => c <= EVENTS)
  .sort((a, b) => a - b)
const IDLE_SECONDS = 10
const RETENTION_SECONDS = Number(process.env.ENDURANCE_RETENTION_SECONDS ?? 120)
/** `[history] commit_window_ms` of the main hub (hub/engine/README.md, "The write budget"). */
const COMMIT_WINDOW_MS = Number(process.env.ENDURANCE_COMMIT_WINDOW_MS ?? 0)
const RETENTION_RATE = 1000
const ONLY = process.env.ENDURANCE_ONLY
if (ONLY !== undefined && ONLY !== '' && ONLY !== 'retention') {
  throw new Error(`ENDURANCE_ONLY=${ONLY}: the one part that runs alone is 'retention'`)
}
const ONLY_RETENTION = ONLY === 'retention'
/** The allocator the systemd unit would give the hub here (hub/service/jemalloc.ts). */
const JEMALLOC =
  process.env.ENDURANCE_MALLOC === 'glibc'
    ? ({ path: null, why: 'ENDURANCE_MALLOC=glibc' } as const)
    : await findJemalloc()
const MALLOC_ENV = mallocEnvironment(JEMALLOC.path)
const RETENTION_AGE_DAYS = 0.0003
const RETENTION_MAX_MB = 64
/**
 * A quarter MiB: the 26-s window then spans about 30 segments, so dropping one moves the log by a
 * few percent, as dropping one of the default 256 in 1 GiB does; with 1 MiB it was 13%.
 */
const RETENTION_SEGMENT_MB = 0.25
const SAMPLE_EVERY_MS = 5000

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const n0 = (x: number): string => Math.round(x).toLocaleString('en-US')
const mb = (b: number): string => `${(b / 1024 / 1024).toFixed(1)} MB`
const progress = (s: string): void => void process.stderr.write(`[endurance] ${s}\n`)
const say = (s: string): void => void process.stdout.write(`${s}\n`)

interface Io {
  writeBytes: number
  syscw: number
}

function ioOf(path: string): Io {
  const t = readFileSync(path, 'utf8')
  const field = (k: string): number => Number(new RegExp(`^${k}: (\\d+)`, 'm').exec(t)?.[1] ?? NaN)
  return { writeBytes: field('write_bytes'), syscw: field('syscw') }
}

/** Every file's size under `dir`, recursively; a file LevelDB deletes while we list counts nothing. */
function sizeOf(dir: string): number {
  let total = 0
  let names: string[]
  try {
    names = readdirSync(dir, { recursive: true }) as string[]
  } catch {
    return 0
  }
  for (const name of names) {
    try {
      const st = statSync(join(dir, name))
      if (st.isFile()) total += st.size
    } catch {
      // compacted away between the listing and the stat
    }
  }
  return total
}

/** <data>/engine's size, with its history log's share (hub/engine/log/) when the store has one. */
function storeSize(engineDir: string): { total: number; log: number; text: string } {
  const total = sizeOf(engineDir)
  const log = sizeOf(join(engineDir, 'history'))
  return { total, log, text: log > 0 ? `${mb(total)} (history log ${mb(log)})` : mb(total) }
}

/** What a window of the hub's life cost: bytes written, write calls and CPU seconds. */
interface Cost {
  writeBytes: number
  syscw: number
  cpuSec: number
  /** The main thread's share (the event path's JavaScript); the rest is libuv's pool, LevelDB's compaction thread and V8's helpers. */
  mainCpuSec: number
  sec: number
}

/** The main thread's CPU: its task's stat file (its tid is the pid). */
const mainCpuSecOf = (pid: number): number => statCpuSec(`/proc/${pid}/task/${pid}/stat`)

function meter(pid: number): () => Cost {
  const io0 = ioOf(`/proc/${pid}/io`)
  const cpu0 = cpuSecOf(pid)
  const main0 = mainCpuSecOf(pid)
  const t0 = performance.now()
  return () => {
    const io = ioOf(`/proc/${pid}/io`)
    return {
      writeBytes: io.writeBytes - io0.writeBytes,
      syscw: io.syscw - io0.syscw,
      cpuSec: cpuSecOf(pid) - cpu0,
      mainCpuSec: mainCpuSecOf(pid) - main0,
      sec: (performance.now() - t0) / 1000,
    }
  }
}

/**
 * RSS once the hub has been idle long enough to give back the heap a burst grew: it runs a full
 * collection once it has been quiet QUIET_MS after a busy spell (hub/memory/give-back.ts), and
 * what the burst left to do (marks forgotten, LevelDB's staged write) is a busy window of its
 * own up to a minute after the last event. Sampled every 2 s until five samples in a row (8 s)
 * are within 2% of each other, at least QUIET_MS + 60 s and at most 90 s more.
 */
async function settledRss(pid: number): Promise<{ rss: number; sec: number }> {
  const t0 = performance.now()
  const least = (QUIET_MS + 60_000) / 1000
  const samples: number[] = []
  for (;;) {
    await sleep(2000)
    samples.push(rssOf(pid))
    const last = samples.slice(-5)
    const sec = Math.round((performance.now() - t0) / 1000)
    const steady = last.length === 5 && Math.max(...last) <= Math.min(...last) * 1.02
    if ((steady && sec >= least) || sec >= least + 90) return { rss: samples[samples.length - 1]!, sec }
  }
}

/** The hub's V8 heap, from its own GET /metrics (prom-client's process figures), in bytes. */
async function heapOf(port: number): Promise<{ used: number; total: number; external: number }> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()
  const get = (name: string): number =>
    Number(new RegExp(`^${name} (\\S+)`, 'm').exec(text)?.[1] ?? Number.NaN)
  return {
    used: get('nodejs_heap_size_used_bytes'),
    total: get('nodejs_heap_size_total_bytes'),
    external: get('nodejs_external_memory_bytes'),
  }
}

/**
 * Waits at least `atLeastMs`, then until `pid` has written nothing for STAGE_MS and 2 s more (at
 * most 120 s more): longer than the engine holds its LevelDB writes back
 * (hub/engine/store-context.ts), so they are not read as idle writes. How long that took, in s.
 */
async function quiet(pid: number, atLeastMs = 0): Promise<number> {
  const t0 = performance.now()
  await sleep(atLeastMs)
  let last = ioOf(`/proc/${pid}/io`).writeBytes
  let still = performance.now()
  while (performance.now() - t0 < atLeastMs + 120_000) {
    await sleep(250)
    const now = ioOf(`/proc/${pid}/io`).writeBytes
    if (now !== last) {
      last = now
      still = performance.now()
    } else if (performance.now() - still >= STAGE_MS + 2000) break
  }
  return (still - t0) / 1000
}

/**
 * The disk's floor under one durable write, in this process: `n` 1 KiB appends (a page holds four,
 * so none spans two) to `file` in `dir` (the hubs' temp folder, so the same disk), each followed by
 * fdatasync when `sync`, `gapMs` apart. What each cost. A second apart, on this machine's ext4, a
 * few appends a minute cost a page or more beyond their own (the file system's own writes, charged
 * to whoever syncs), which back to back barely shows.
 */
async function floorAppends(dir: string, file: string, n: number, sync: boolean, gapMs = 0): Promise<Io[]> {
  const fd = openSync(join(dir, file), 'a')
  const chunk = Buffer.alloc(1024, 0x78)
  const each: Io[] = []
  try {
    for (let i = 0; i < n; i++) {
      const before = ioOf('/proc/self/io')
      writeSync(fd, chunk)
      if (sync) fdatasyncSync(fd)
      const after = ioOf('/proc/self/io')
      each.push({ writeBytes: after.writeBytes - before.writeBytes, syscw: after.syscw - before.syscw })
      if (gapMs > 0) await sleep(gapMs)
    }
  } finally {
    closeSync(fd)
  }
  return each
}

const meanIo = (xs: readonly Io[]): Io => ({
  writeBytes: xs.reduce((a, x) => a + x.writeBytes, 0) / xs.length,
  syscw: xs.reduce((a, x) => a + x.syscw, 0) / xs.length,
})

/** A publisher and a subscriber to out/+ on a hub's broker; each answer counted once by its seq. */
async function driver(url: string, capacity: number) {
  const opts = { reconnectPeriod: 0, clean: true }
  const tag = `${process.pid}-${Math.random().toString(36).slice(2, 8)}`
  const pub = await mqtt.connectAsync(url, { ...opts, clientId: `endurance-pub-${tag}` })
  const sub = await mqtt.connectAsync(url, { ...opts, clientId: `endurance-sub-${tag}` })
  withNoDelay(pub)
  withNoDelay(sub)
  await sub.subscribeAsync('out/+', { qos: 1 })
  const seen = new Uint8Array(capacity)
  let answered = 0
  let repeated = 0
  let next = 1
  const waiters = new Map<number, () => void>()
  let onAnswer: (() => void) | undefined
  sub.on('message', (topic) => {
    const seq = Number(topic.slice(4))
    if (!(seq > 0 && seq < capacity)) return
    if (seen[seq]) repeated++
    else {
      seen[seq] = 1
      answered++
    }
    waiters.get(seq)?.()
    onAnswer?.()
  })
  const publish = (seq: number): Promise<unknown> =>
    pub.publishAsync(`in/${seq}`, `{"seq":${seq},"v":${10 + (seq % 10)}}`, { qos: 1 })

  /** Until `answered` reaches `target`, or 15 s pass with no answer: what never arrived is lost. */
  const answeredUpTo = async (target: number): Promise<number> => {
    let last = -1
    while (answered < target && answered !== last) {
      last = answered
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, 15_000)
        function done(): void {
          clearTimeout(timer)
          onAnswer = undefined
          resolve()
        }
        onAnswer = () => {
          if (answered >= target) done()
        }
      })
    }
    return Math.max(0, target - answered)
  }

  return {
    get answered() {
      return answered
    },
    get repeated() {
      return repeated
    },
    get sent() {
      return next - 1
    },
    /** One event, retried every 500 ms until the hub answers (its subscription is in place). */
    async ready(): Promise<void> {
      for (let tries = 0; tries < 120; tries++) {
        const seq = next++
        const got = new Promise<boolean>((resolve) => {
          waiters.set(seq, () => resolve(true))
          setTimeout(() => resolve(false), 500)
        })
        await publish(seq)
        const ok = await got
        waiters.delete(seq)
        if (ok) return
      }
      throw new Error('the hub never answered')
    },
    /** `n` events published at once; resolves once every answer arrived (or stopped arriving). */
    async burst(n: number): Promise<{ sec: number; lost: number }> {
      const target = answered + n
      const t0 = performance.now()
      const acks: Promise<unknown>[] = []
      for (let i = 0; i < n; i++) acks.push(publish(next++))
      const lost = await answeredUpTo(target)
      const sec = (performance.now() - t0) / 1000
      await Promise.all(acks)
      return { sec, lost }
    },
    /**
     * `n` events at `rate`/s, one at a time, each PUBACK awaited; resolves once all are answered.
     * `tick` is called before each publish, so a caller can read what each interval cost.
     */
    async paced(
      rate: number,
      n: number,
      tick: () => void,
    ): Promise<{ lost: number; late: number; ackMs: number[] }> {
      const target = answered + n
      const t0 = performance.now()
      let late = 0
      const ackMs: number[] = []
      for (let i = 0; i < n; i++) {
        const at = t0 + (i * 1000) / rate
        const wait = at - performance.now()
        if (wait > 0) await sleep(wait)
        else if (i > 0) late++
        tick()
        const sent = performance.now()
        await publish(next++)
        ackMs.push(performance.now() - sent)
      }
      const lost = await answeredUpTo(target)
      // The window is n intervals long whatever the last answer's time, so it compares with idle.
      const end = t0 + (n * 1000) / rate
      if (end > performance.now()) await sleep(end - performance.now())
      return { lost, late, ackMs }
    },
    /** `perTick` events published at once every 100 ms, each tick's PUBACKs awaited, for `sec` seconds. */
    async steady(perTick: number, sec: number, each: (elapsed: number) => void): Promise<void> {
      const t0 = performance.now()
      for (let tick = 0; tick * 100 < sec * 1000; tick++) {
        const wait = t0 + tick * 100 - performance.now()
        if (wait > 0) await sleep(wait)
        const acks: Promise<unknown>[] = []
        for (let i = 0; i < perTick; i++) acks.push(publish(next++))
        await Promise.all(acks)
        each((performance.now() - t0) / 1000)
      }
    },
    /** Until every event sent so far is answered (or answers stop arriving); what never arrived. */
    drain: (): Promise<number> => answeredUpTo(next - 1),
    async close(): Promise<void> {
      await pub.endAsync(true)
      await sub.endAsync(true)
    },
  }
}

const perEvent = (c: Cost, n: number): string =>
  `write_bytes ${n0(c.writeBytes / n)}/event (${(c.writeBytes / n / 4096).toFixed(2)} pages of 4 KiB), syscw ${(c.syscw / n).toFixed(2)}/event`

/** The main hub: the disk per event, CPU per event, the store and RSS as runs pile up, the rate at the end. */
async function endurance(dir: string): Promise<void> {
  const floor = {
    synced: meanIo(await floorAppends(dir, 'floor-synced', 500, true)),
    unsynced: meanIo(await floorAppends(dir, 'floor-unsynced', 500, false)),
  }
  say(
    `floor     1 KiB append + fdatasync (this process, the same folder, 500 times): write_bytes ${n0(floor.synced.writeBytes)} (${(floor.synced.writeBytes / 4096).toFixed(2)} pages), syscw ${floor.synced.syscw.toFixed(2)} per append; unsynced: write_bytes ${n0(floor.unsynced.writeBytes)} per append`,
  )
  const nodeArgs = (process.env.ENDURANCE_NODE_ARGS ?? '').split(' ').filter((a) => a !== '')
  if (nodeArgs.length > 0) say(`node      the hub runs with ${nodeArgs.join(' ')} (ENDURANCE_NODE_ARGS)`)
  if (COMMIT_WINDOW_MS > 0)
    say(`window    [history] commit_window_ms = ${COMMIT_WINDOW_MS} (ENDURANCE_COMMIT_WINDOW_MS)`)
  const metricsPort = await freePort()
  const hub: HubProcess = await startHub({
    dir,
    nodeArgs,
    env: MALLOC_ENV,
    clientId: `svc-endurance-${process.pid}`,
    // Every run of the bench kept, so the store's size over the runs is per kept run. The metrics
    // listener (loopback, no token) tells the V8 heap apart from the rest of RSS; it is first read
    // at the first checkpoint, after the idle and paced figures, as prom-client then starts an
    // event-loop monitor that wakes the hub 10 times a second (hub/metrics/registry.ts).
    toml: `[history]\nmax_mb = 1048576\ncommit_window_ms = ${COMMIT_WINDOW_MS}\n[metrics]\nport = ${metricsPort}\n`,
  })
  const capacity = EVENTS + 3 * BURST + 100_000
  const d = await driver(hub.brokerUrl, capacity)
  const engineDir = join(hub.dataDir, 'engine')
  const t0 = performance.now()
  // A hub that dies under the load (out of memory, say) is a result: said, not hidden in a stall.
  let died = ''
  const onExit = (code: number | null, signal: string | null): void => {
    died = `the hub exited (code ${code}, signal ${signal}) at ${n0(d.answered)} answered runs, ${((performance.now() - t0) / 1000).toFixed(0)} s in`
    say(died)
  }
  hub.child.once('exit', onExit)
  try {
    await sleep(3000)
    const idleRss = rssOf(hub.pid)
    await d.ready()
    // Warm-up to 10,000 runs with the paced events: the JIT has compiled the event path before
    // anything is measured, as in a hub that has been running.
    const warm = await d.burst(CHECKPOINTS[0]! - PACED_TOTAL - d.sent)
    progress(`warm-up: ${n0(d.sent)} runs in ${warm.sec.toFixed(1)} s (lost ${warm.lost})`)
    // What the warm-up left to write is the warm-up's, not the idle hub's or the first paced
    // events': the engine's staged LevelDB share, LevelDB's compaction of it, and its events'
    // once-only marks, forgotten 30 s after their PUBACK in a lazy write (written alone within a
    // minute when no event carries it; hub/engine/README.md, "The write budget").
    // The floor at one append a second is taken meanwhile, in this process: the hub only
    // finishes what the warm-up left, and its writes are not this process's.
    const [settled, paced] = await Promise.all([
      quiet(hub.pid, FORGET_AFTER_MS + LAZY_MS + 2000),
      floorAppends(dir, 'floor-paced', 90, true, 1000),
    ])
    const pacedMean = meanIo(paced).writeBytes
    say(
      `floor     the same at 1/s (90 appends, as the hub settled after the warm-up): write_bytes ${n0(pacedMean)} per append (${(pacedMean / 4096).toFixed(2)} pages); ${paced.filter((x) => x.writeBytes > 4096).length} of 90 cost more than a page, up to ${n0(Math.max(...paced.map((x) => x.writeBytes)))}`,
    )
    progress(
      `the hub stopped writing ${settled.toFixed(1)} s after the warm-up (waited at least ${(FORGET_AFTER_MS + LAZY_MS + 2000) / 1000} s for its once-only marks to be forgotten)`,
    )
    const idleMeter = meter(hub.pid)
    await sleep(IDLE_SECONDS * 1000)
    const idle = idleMeter()
    say(
      `idle      the hub over ${idle.sec.toFixed(1)} s with no events, ${n0(d.sent)} runs stored: write_bytes ${n0(idle.writeBytes / idle.sec)}/s, syscw ${(idle.syscw / idle.sec).toFixed(1)}/s, CPU ${((idle.cpuSec / idle.sec) * 1000).toFixed(1)} ms/s`,
    )
    for (const p of PACED) {
      const m = meter(hub.pid)
      // Each interval's bytes apart: a LevelDB memtable flush or compaction lands in one interval
      // and is the whole difference between the mean and the median.
      const ticks: number[] = []
      const r = await d.paced(p.rate, p.n, () => ticks.push(ioOf(`/proc/${hub.pid}/io`).writeBytes))
      const c = m()
      ticks.push(ioOf(`/proc/${hub.pid}/io`).writeBytes)
      const each = ticks.slice(1).map((b, i) => b - ticks[i]!)
      // What the events left to write is theirs: LevelDB's share of them waits for the hub to go
      // quiet (hub/engine/store-context.ts), after their marks are forgotten.
      const after = await quiet(hub.pid, FORGET_AFTER_MS + LAZY_MS + 2000)
      const all = m()
      say(
        `paced     ${String(p.rate).padStart(2)}/s × ${String(p.n).padStart(3)} over ${c.sec.toFixed(1)} s: ${perEvent(c, p.n)}; per interval median ${n0(median(each))}, max ${n0(Math.max(...each))} write_bytes; PUBACK p50 ${median(r.ackMs).toFixed(1)} ms; with what they left to write (its last write ${after.toFixed(0)} s after them): write_bytes ${n0(all.writeBytes / p.n)}/event (${(all.writeBytes / p.n / 4096).toFixed(2)} pages), syscw ${(all.syscw / p.n).toFixed(2)}/event; CPU ${((c.cpuSec / p.n) * 1000).toFixed(2)} ms/event, main thread ${((c.mainCpuSec / p.n) * 1000).toFixed(2)} (idle hub over the same time: write_bytes ${n0((idle.writeBytes / idle.sec) * c.sec)}, CPU ${((idle.cpuSec / idle.sec) * c.sec * 1000).toFixed(0)} ms)${r.lost ? `, lost ${r.lost}` : ''}${r.late ? `, ${r.late} sent late` : ''}`,
      )
    }
    const checkpoint = async (): Promise<void> => {
      await sleep(1000)
      const loaded = rssOf(hub.pid)
      const settled = await settledRss(hub.pid)
      const parts = rssPartsOf(hub.pid)
      const h = await heapOf(metricsPort)
      const store = storeSize(engineDir)
      say(
        `at ${n0(d.sent).padStart(9)} runs  RSS ${mb(loaded)} 1 s after the last events, ${mb(settled.rss)} settled (${settled.sec} s idle: anonymous ${mb(parts.anon)}, file pages ${mb(parts.file)}; V8 heap ${mb(h.total)}, ${mb(h.used)} of it used with garbage not yet collected, external ${mb(h.external)}); 0 runs, 3 s after start: ${mb(idleRss)}; store ${store.text}, ${n0(store.total / d.sent)} B/run; broker ${mb(sizeOf(join(hub.dataDir, 'broker')))}, attest ${mb(sizeOf(join(hub.dataDir, 'attest')))}; ${((performance.now() - t0) / 1000).toFixed(0)} s in, load ${loadAverages()}`,
      )
    }
    await checkpoint()
    const measuredBurst = async (): Promise<number> => {
      const label = `from ${n0(d.sent)} stored runs`
      const m = meter(hub.pid)
      const r = await d.burst(BURST)
      const c = m()
      const rate = BURST / r.sec
      say(
        `burst     ${n0(BURST)} at once, ${label}: ${n0(rate)} events/s (lost ${r.lost}); ${perEvent(c, BURST)}; CPU ${((c.cpuSec / BURST) * 1000).toFixed(3)} ms/event, main thread ${((c.mainCpuSec / BURST) * 1000).toFixed(3)}`,
      )
      return rate
    }
    /** The median rate of RATE_BURSTS bursts, back to back; each is printed. */
    const measuredRate = async (): Promise<{ rate: number; from: number }> => {
      const from = d.sent
      const rates: number[] = []
      for (let i = 0; i < RATE_BURSTS && !died; i++) rates.push(await measuredBurst())
      return { rate: median(rates), from }
    }
    const start = await measuredRate()
    // The whole fill's bytes per event: LevelDB's merges come in steps far apart, so one burst
    // of 20,000 carries one or none; over the fill they average out.
    const fillFrom = d.sent
    const fillMeter = meter(hub.pid)
    let nextProgress = 50_000
    for (const cp of CHECKPOINTS.slice(1)) {
      while (d.sent < cp && !died) {
        const n = Math.min(BURST, cp - d.sent)
        const r = await d.burst(n)
        if (died) break
        if (d.sent >= nextProgress) {
          progress(
            `${n0(d.sent)}/${n0(EVENTS)} runs, ${n0(n / r.sec)} events/s this burst${r.lost ? ` (lost ${r.lost})` : ''}, RSS ${mb(rssOf(hub.pid))}, store ${storeSize(engineDir).text}, ${((performance.now() - t0) / 1000).toFixed(0)} s, load ${loadAverages()}`,
          )
          nextProgress = d.sent - (d.sent % 50_000) + 50_000
        }
      }
      if (died) return
      await checkpoint()
    }
    const fill = fillMeter()
    say(
      `fill      ${n0(d.sent - fillFrom)} events in bursts of ${n0(BURST)}, ${n0(fillFrom)} → ${n0(d.sent)} stored runs, the checkpoints' idle time included: ${perEvent(fill, d.sent - fillFrom)}`,
    )
    const end = await measuredRate()
    say(
      `rate      from ${n0(end.from)} stored runs / from ${n0(start.from)}, the median of ${RATE_BURSTS} bursts each: ${(end.rate / start.rate).toFixed(2)}x (${n0(end.rate)} against ${n0(start.rate)} events/s); answers repeated ${d.repeated}, never arrived ${d.sent - d.answered}`,
    )
  } finally {
    hub.child.off('exit', onExit)
    await d.close()
    await hub.stop()
  }
}

/** A second hub with a short retention window: its store sampled while events keep coming. */
async function retention(dir: string): Promise<void> {
  const hub = await startHub({
    dir,
    env: MALLOC_ENV,
    clientId: `svc-endurance-retention-${process.pid}`,
    toml: `[history]\nmax_age_days = ${RETENTION_AGE_DAYS}\nmax_mb = ${RETENTION_MAX_MB}\nsegment_mb = ${RETENTION_SEGMENT_MB}\n`,
  })
  const d = await driver(hub.brokerUrl, RETENTION_RATE * RETENTION_SECONDS + 100_000)
  const engineDir = join(hub.dataDir, 'engine')
  const samples: { t: number; size: number; log: number; runs: number; text: string }[] = []
  const sample = (t: number) => {
    const s = storeSize(engineDir)
    return { t, size: s.total, log: s.log, runs: d.sent, text: s.text }
  }
  try {
    await d.ready()
    let nextSample = 0
    samples.push(sample(0))
    await d.steady(RETENTION_RATE / 10, RETENTION_SECONDS, (t) => {
      if (t * 1000 < nextSample + SAMPLE_EVERY_MS) return
      nextSample += SAMPLE_EVERY_MS
      const at = sample(t)
      samples.push(at)
      progress(`retention: ${t.toFixed(0)} s, ${n0(d.sent)} runs, store ${at.text}`)
    })
    const lost = await d.drain()
    samples.push(sample(RETENTION_SECONDS))
    const end = storeSize(engineDir)
    const age = RETENTION_AGE_DAYS * 86_400
    say(
      `retention [history] max_age_days = ${RETENTION_AGE_DAYS} (${age.toFixed(0)} s), max_mb = ${RETENTION_MAX_MB}, segment_mb = ${RETENTION_SEGMENT_MB}; ${n0(RETENTION_RATE)} events/s for ${RETENTION_SECONDS} s, ${n0(d.sent)} runs (the age window holds about ${n0(RETENTION_RATE * age)}); store at the end ${end.text}, RSS ${mb(rssOf(hub.pid))}${lost ? `; ${lost} never answered` : ''}`,
    )
    say(
      `retention store every ${SAMPLE_EVERY_MS / 1000} s: ${samples.map((s) => mb(s.size).replace(' MB', '')).join(' ')} MB`,
    )
    say(
      `retention history log (what retention bounds) every ${SAMPLE_EVERY_MS / 1000} s: ${samples.map((s) => mb(s.log).replace(' MB', '')).join(' ')} MB`,
    )
    const half = samples.filter((s) => s.t >= RETENTION_SECONDS / 2)
    const first = half[0]!
    const last = half.at(-1)!
    const sizes = half.map((s) => s.size)
    const spread = (Math.max(...sizes) - Math.min(...sizes)) / Math.min(...sizes)
    const grew = (last.size - first.size) / first.size
    const logs = half.map((s) => s.log)
    const logSpread = (Math.max(...logs) - Math.min(...logs)) / Math.min(...logs)
    say(
      `retention history log over the last half: ${mb(Math.min(...logs))} to ${mb(Math.max(...logs))}, within ${(logSpread * 100).toFixed(1)}%; ${mb(first.log)} at ${first.t.toFixed(0)} s, ${mb(last.log)} at ${last.t.toFixed(0)} s`,
    )
    say(
      spread <= 0.1
        ? `retention flat: within ${(spread * 100).toFixed(1)}% over the last half (${mb(first.size)} at ${first.t.toFixed(0)} s, ${mb(last.size)} at ${last.t.toFixed(0)} s)`
        : `retention not flat: ${mb(Math.min(...sizes))} to ${mb(Math.max(...sizes))} over the last half, ${(spread * 100).toFixed(0)}% apart; ${grew >= 0 ? 'grew' : 'shrank'} ${Math.abs(grew * 100).toFixed(0)}% from its start to its end (${mb(first.size)} at ${first.t.toFixed(0)} s → ${mb(last.size)} at ${last.t.toFixed(0)} s; ${n0(first.runs)} → ${n0(last.runs)} runs written)`,
    )
  } finally {
    await d.close()
    await hub.stop()
  }
}

const dir = await mkdtemp(join(process.env.ENDURANCE_DIR || tmpdir(), 'svc-endurance-bench-'))
try {
  say(
    `${n0(EVENTS)} runs, bursts of ${n0(BURST)}; every event passes the condition (one run each); ${cpus().length} cores, load ${loadAverages()}`,
  )
  say(`files     in ${dir}: ${describeMount(mountOf(dir))}`)
  say(
    `malloc    ${JEMALLOC.path === null ? `glibc's (${JEMALLOC.why})` : `jemalloc (${JEMALLOC.path})`}, as the unit sets it: ${Object.entries(
      MALLOC_ENV,
    )
      .map(([k, v]) => `${k}=${v}`)
      .join(' ')}`,
  )
  if (!ONLY_RETENTION) await endurance(dir)
  await retention(dir)
  say(loadLine())
} finally {
  await rm(dir, { recursive: true, force: true })
}
