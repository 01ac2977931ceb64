// The hub. Prints, from one run:
//   baseline: raw Aedes publish→subscribe latency p50/p99 (loopback, QoS 1, two mqtt.js clients)
//   router only: MQTT publish → the router calls engine.trigger (an engine stub), 50 SOPs planned
//   event→run-start latency p50/p99: an MQTT publish on boards/<board>/<signal> until the engine
//     has admitted and started the run (the router's "trigger admitted" debug line, outcome started)
//   baseline: a bare `node` process's RSS, and the idle RSS of `svc hub` with 50 SOPs loaded
//     (a real child process, started the way users start it: node --import tsx), and beside it the
//     way hub/svc-hub.service runs it: bundled by `npm run build` (cli/build/dist.ts, esbuild,
//     built here into a temp folder), bare node, --max-semi-space-size=1, the unit's allocator
//     (jemalloc where node runs with it, glibc's beside it then); that one is read 5 s after start (the aim's figure) and again at 15 s, once V8's memory
//     reducer has collected the start-up garbage as it does in a long-running hub
import { spawn, spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import mqtt from 'mqtt'
import { startBroker } from '../hub/broker/broker.ts'
import { parseConfig } from '../hub/daemon/config.ts'
import { startHub } from '../hub/daemon/hub.ts'
import { buildDist } from '../cli/build/dist.ts'
import { findJemalloc } from '../hub/service/jemalloc.ts'
import { mallocEnvironment } from '../hub/service/unit.ts'
import type { Log } from '../hub/log.ts'
import { startTriggerRouter } from '../hub/triggers/router.ts'
import { matches } from '../sops/conditions.ts'
import { loadSops } from '../sops/load.ts'

const root = fileURLToPath(new URL('..', import.meta.url))
const N = 400

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN
}
const ms = (x: number): string => `${x.toFixed(3)} ms`

async function writeSops(dir: string, count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    const name = `sop-${String(i).padStart(2, '0')}`
    await mkdir(join(dir, name), { recursive: true })
    const trigger =
      i % 5 === 0
        ? `type = "mqtt"\ntopic = "sensors/+/t${i}"\ncondition = "$.v > 1"`
        : i % 7 === 0
          ? `type = "cron"\nexpression = "${i % 60} 3 * * *"`
          : `type = "peripheral"\nboard = "b${i % 4}"\nsignal = "s${i}"\ncondition = "$.amount >= 1"`
    await writeFile(
      join(dir, name, 'SOP.toml'),
      `[sop]\nname = "${name}"\ndescription = "bench ${i}"\nexecution_mode = "deterministic"\nmax_concurrent = 64\nagent = "bench"\n\n[[triggers]]\n${trigger}\n`,
    )
    await writeFile(
      join(dir, name, 'SOP.md'),
      `# ${name}\n\n## Steps\n\n1. **Pause** — nothing.\n   - call: {"tool":"wait","args":{"ms":0}}\n   - terminal: true\n`,
    )
  }
}

async function aedesBaseline(dir: string): Promise<number[]> {
  const silent: Log = {
    info: () => undefined,
    warn: () => undefined,
    error: () => undefined,
    debug: () => undefined,
  } as unknown as Log
  const broker = await startBroker({
    host: '127.0.0.1',
    port: 0,
    wsPort: null,
    dbPath: join(dir, 'baseline-broker'),
    log: silent,
  })
  const sub = await mqtt.connectAsync(broker.url, { reconnectPeriod: 0 })
  const pub = await mqtt.connectAsync(broker.url, { reconnectPeriod: 0 })
  await sub.subscribeAsync('boards/+/+', { qos: 1 })
  const lat: number[] = []
  let resolveOne: (() => void) | undefined
  sub.on('message', () => resolveOne?.())
  for (let i = 0; i < N + 50; i++) {
    const got = new Promise<void>((r) => (resolveOne = r))
    const t0 = performance.now()
    await pub.publishAsync('boards/b1/s1', '{"amount":2}', { qos: 1 })
    await got
    if (i >= 50) lat.push(performance.now() - t0)
  }
  await sub.endAsync()
  await pub.endAsync()
  await broker.close()
  return lat
}

/** The router's own share: MQTT → dispatch → an engine stub that answers at once. */
async function routerLatency(dir: string, sopsDir: string): Promise<number[]> {
  const silent = {
    info: () => undefined,
    warn: () => undefined,
    error: () => undefined,
    debug: () => undefined,
  } as unknown as Log
  const broker = await startBroker({
    host: '127.0.0.1',
    port: 0,
    wsPort: null,
    dbPath: join(dir, 'router-broker'),
    log: silent,
  })
  const client = await mqtt.connectAsync(broker.url, {
    clientId: 'bench-router',
    clean: false,
    reconnectPeriod: 0,
  })
  const { sops } = await loadSops(sopsDir)
  let hit: (() => void) | undefined
  const engine = {
    trigger: async () => {
      hit?.()
      return { outcome: 'started' as const, runId: 'x', reason: 'stub' }
    },
  }
  const router = await startTriggerRouter(sops, {
    engine,
    matches,
    log: silent,
    mqtt: client,
    cron: { timezone: 'UTC', catchUp: false },
    filesystem: { debounceMs: 100 },
  })
  const pub = await mqtt.connectAsync(broker.url, { reconnectPeriod: 0 })
  const lat: number[] = []
  for (let i = 0; i < N + 50; i++) {
    const got = new Promise<void>((r) => (hit = r))
    const t0 = performance.now()
    await pub.publishAsync('boards/b1/s1', '{"amount":2}', { qos: 1 })
    await got
    if (i >= 50) lat.push(performance.now() - t0)
  }
  await pub.endAsync()
  await router.stop()
  await client.endAsync()
  await broker.close()
  return lat
}

async function hubLatency(dir: string, sopsDir: string): Promise<number[]> {
  let admitted: ((outcome: string) => void) | undefined
  const noop = (): void => undefined
  const log = {
    info: noop,
    warn: noop,
    error: (o: unknown, msg?: string) => process.stderr.write(`${msg ?? ''} ${JSON.stringify(o)}\n`),
    debug: (o: unknown, msg?: string) => {
      if (msg === 'trigger admitted') admitted?.((o as { outcome: string }).outcome)
    },
  } as unknown as Log
  const cfg = parseConfig(
    `[hub]\nsops_dir = "${sopsDir}"\ndata_dir = "${join(dir, 'data')}"\n[broker]\nport = 0\n[webhook]\nenabled = false\n`,
    join(dir, 'hub.toml'),
    { SVC_HOME: dir },
  )
  if (!cfg.ok) throw new Error(cfg.error)
  const hub = await startHub(cfg.config, log)
  const pub = await mqtt.connectAsync(hub.brokerUrl, { reconnectPeriod: 0 })
  const lat: number[] = []
  // sop-01 listens on boards/b1/s1.
  for (let i = 0; i < N + 50; i++) {
    const got = new Promise<string>((r) => (admitted = r))
    const t0 = performance.now()
    await pub.publishAsync('boards/b1/s1', '{"amount":2}', { qos: 1 })
    const outcome = await got
    if (outcome !== 'started') throw new Error(`run not started: ${outcome}`)
    if (i >= 50) lat.push(performance.now() - t0)
    if (i % 50 === 49) await hub.engine.idle()
  }
  await pub.endAsync()
  await hub.engine.idle()
  await hub.close()
  return lat
}

function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return m ? Number(m[1]) * 1024 : NaN
}

interface HubRun {
  nodeArgs?: string[]
  /** The bundled CLI (dist/main.js); without it, cli/main.ts through tsx. */
  entry?: string
  env?: NodeJS.ProcessEnv
  /** After the idle figure: this many board events (each starts a run), then idle again. */
  runs?: number
  /** Also read the RSS 15 s after start-up, once V8's memory reducer (8 s after the last full GC) has run. */
  settled?: boolean
}

async function hubIdleRss(
  dir: string,
  sopsDir: string,
  run: HubRun = {},
): Promise<{ idle: number; settled: number; afterRuns: number }> {
  const nodeArgs = run.nodeArgs ?? []
  const home = await mkdtemp(join(dir, 'home-'))
  await mkdir(home, { recursive: true })
  await writeFile(
    join(home, 'hub.toml'),
    `[hub]\nsops_dir = "${sopsDir}"\nlog_level = "warn"\n[broker]\nport = 0\n[webhook]\nport = 0\n[api]\nport = 0\n[console]\nenabled = false\n`,
  )
  const entry = run.entry ? [run.entry] : ['--import', 'tsx', join(root, 'cli/main.ts')]
  const child = spawn(process.execPath, [...nodeArgs, ...entry, 'hub', '--log-level', 'info'], {
    cwd: root,
    env: { ...process.env, ...run.env, SVC_HOME: home },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  try {
    const brokerUrl = await new Promise<string>((resolve, reject) => {
      let out = ''
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString()
        const line = out.split('\n').find((l) => l.includes('"hub started"'))
        if (line) resolve((JSON.parse(line) as { broker: string }).broker)
      })
      child.on('exit', (code) => reject(new Error(`hub exited (${code})`)))
    })
    child.stdout.resume()
    // Idle: let start-up garbage be collected the way it is in a long-running hub.
    await new Promise((r) => setTimeout(r, 5000))
    const idle = rssOf(child.pid as number)
    let settled = NaN
    if (run.settled) {
      await new Promise((r) => setTimeout(r, 10_000))
      settled = rssOf(child.pid as number)
    }
    if (!run.runs) return { idle, settled, afterRuns: NaN }
    // Busy, then idle again: what stays resident once the engine's and broker's LevelDBs have
    // taken writes (memtables, block caches) and the heap has grown to its working size.
    const pub = await mqtt.connectAsync(brokerUrl, { reconnectPeriod: 0 })
    for (let i = 0; i < run.runs; i++) await pub.publishAsync('boards/b1/s1', '{"amount":2}', { qos: 1 })
    await pub.endAsync()
    await new Promise((r) => setTimeout(r, 5000))
    return { idle, settled, afterRuns: rssOf(child.pid as number) }
  } finally {
    const exited = new Promise((r) => child.once('exit', r))
    process.kill(child.pid as number, 'SIGTERM')
    await exited
  }
}

const dir = await mkdtemp(join(tmpdir(), 'svc-hub-bench-'))
try {
  const sopsDir = join(dir, 'sops')
  await writeSops(sopsDir, 50)

  const base = await aedesBaseline(dir)
  const routed = await routerLatency(dir, sopsDir)
  const hub = await hubLatency(dir, sopsDir)
  process.stdout.write(
    `baseline  raw Aedes publish→subscribe (QoS 1, loopback)   p50 ${ms(pct(base, 50))}  p99 ${ms(pct(base, 99))}  (n=${base.length})\n`,
  )
  process.stdout.write(
    `router    event→engine.trigger (engine stub, 50 SOPs)     p50 ${ms(pct(routed, 50))}  p99 ${ms(pct(routed, 99))}  (n=${routed.length})\n`,
  )
  process.stdout.write(
    `hub       event→run-start (MQTT → trigger → engine start) p50 ${ms(pct(hub, 50))}  p99 ${ms(pct(hub, 99))}  (n=${hub.length})\n`,
  )
  process.stdout.write(
    `          ratio p50 ${(pct(hub, 50) / pct(base, 50)).toFixed(2)}x  p99 ${(pct(hub, 99) / pct(base, 99)).toFixed(2)}x\n`,
  )

  const idle = 'setTimeout(() => { process.stdout.write(String(process.memoryUsage().rss)) }, 500)'
  const bareRss = Number(spawnSync(process.execPath, ['-e', idle], { encoding: 'utf8' }).stdout)
  // tsx runs its loader on a hooks thread with its own heap: part of every `svc` process.
  const tsxRss = Number(
    spawnSync(process.execPath, ['--import', 'tsx', '-e', idle], { encoding: 'utf8', cwd: root }).stdout,
  )
  const hubRss = (await hubIdleRss(dir, sopsDir)).idle
  const hubSmall = (await hubIdleRss(dir, sopsDir, { nodeArgs: ['--max-semi-space-size=1'] })).idle
  const built = await buildDist(join(dir, 'dist'))
  if (!built.ok) throw new Error(built.error)
  const hubJs = (await hubIdleRss(dir, sopsDir, { entry: built.entry })).idle
  // The unit's way: its node flag and its allocator's environment (jemalloc where node runs with
  // it, hub/service/jemalloc.ts), and glibc's beside it when jemalloc is there.
  const jemalloc = await findJemalloc()
  const unitWay = (path: string | null) =>
    hubIdleRss(dir, sopsDir, {
      entry: built.entry,
      nodeArgs: ['--max-semi-space-size=1'],
      env: mallocEnvironment(path),
      runs: 2000,
      settled: true,
    })
  const prod = await unitWay(jemalloc.path)
  const glibc = jemalloc.path === null ? null : await unitWay(null)
  const malloc = jemalloc.path === null ? `glibc's malloc (${jemalloc.why})` : 'jemalloc'
  const hubProd = prod.idle
  const mb = (b: number): string => `${(b / 1024 / 1024).toFixed(1)} MB`
  process.stdout.write(`baseline  bare node process RSS                            ${mb(bareRss)}\n`)
  process.stdout.write(`baseline  node --import tsx, nothing loaded                ${mb(tsxRss)}\n`)
  process.stdout.write(
    `hub       idle RSS, 50 SOPs, embedded broker (tsx)         ${mb(hubRss)}  (${(hubRss / bareRss).toFixed(2)}x bare node; +${mb(hubRss - tsxRss)} over tsx; the development way)\n`,
  )
  process.stdout.write(
    `hub       same, node --max-semi-space-size=1 (tsx)          ${mb(hubSmall)}  (+${mb(hubSmall - tsxRss)} over tsx)\n`,
  )
  process.stdout.write(
    `hub       bundled (dist/), bare node                       ${mb(hubJs)}  (+${mb(hubJs - bareRss)} over bare node)\n`,
  )
  process.stdout.write(`hub       the systemd unit's way below: bundled, semi-space 1 MB, ${malloc}\n`)
  process.stdout.write(
    `hub       the unit's way, 5 s after start                ${mb(hubProd)}  (+${mb(hubProd - bareRss)} over bare node; start-up garbage not collected yet)\n`,
  )
  process.stdout.write(
    `hub       same, 15 s after start (V8's memory reducer ran)  ${mb(prod.settled)}  (+${mb(prod.settled - bareRss)} over bare node; idle: aim < 80 MB ${prod.settled < 80 * 1024 * 1024 ? 'met' : 'NOT met'})\n`,
  )
  process.stdout.write(`hub       same, after 2000 runs and 5 s idle                ${mb(prod.afterRuns)}\n`)
  if (glibc)
    process.stdout.write(
      `hub       the same with glibc's malloc (the unit's two settings): ${mb(glibc.idle)} at 5 s, ${mb(glibc.settled)} at 15 s, ${mb(glibc.afterRuns)} after 2000 runs\n`,
    )
} finally {
  await rm(dir, { recursive: true, force: true })
}
