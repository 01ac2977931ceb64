// The hub console's cost. Prints, from one run:
//   idle RSS of the bundled hub (as hub/svc-hub.service runs it: bare node, semi-space 1 MB,
//     MALLOC_ARENA_MAX=2), 15 s after start, with [console] off and on, rounds alternated; and
//     with it on, again after one visit of each page (templates and routes warmed)
//   the Runs page with 100,000 stored runs (bench/fixtures/many-runs.ts): p50/p99 per page for
//     the newest page, by SOP, by state, an older page (cursor) and a time window, each beside the
//     same query through the local JSON API (GET /sop/runs, limit 50), requests alternated
//   server-sent-event fan-out: 200 board events/s from a simulated board through the real bridge
//     and broker, to 20 open consoles (a separate process): delivery lag p50/p99 and the hub's
//     CPU, beside the same 200 events/s with no console open, rounds alternated
// CONSOLE_BENCH=rss,runs,sse (the default) picks the parts to run.
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { createSimulatingBridge } from '../boards/simulator/bridge.ts'
import { readApiToken } from '../hub/api/token.ts'
import { buildDist } from '../cli/build/dist.ts'
import { parseConfig } from '../hub/daemon/config.ts'
import { startHub } from '../hub/daemon/hub.ts'
import { realParts } from '../hub/daemon/real-parts.ts'
import { silentLog } from '../hub/log.ts'
import { svcPaths } from '../hub/paths.ts'
import { writeManyRuns } from './fixtures/many-runs.ts'

const root = fileURLToPath(new URL('..', import.meta.url))
const RUNS = 100_000
const REQUESTS = 200
const FANOUT = 20
const RATE = 200
const WINDOW_MS = 10_000

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? Number.NaN
}
const mb = (b: number): string => `${(b / 1024 / 1024).toFixed(1)} MB`
const ms = (x: number): string => `${x.toFixed(2)} ms`
const sleep = (t: number) => new Promise((r) => setTimeout(r, t))
const out = (s: string): void => void process.stdout.write(`${s}\n`)

function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return m ? Number(m[1]) * 1024 : Number.NaN
}

async function writeSops(dir: string, count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    const name = `sop-${i}`
    await mkdir(join(dir, name), { recursive: true })
    await writeFile(
      join(dir, name, 'SOP.toml'),
      `[sop]\nname = "${name}"\ndescription = "bench ${i}"\nexecution_mode = "deterministic"\nmax_concurrent = 8\nagent = "bench"\n\n[[triggers]]\ntype = "mqtt"\ntopic = "bench/${i}"\n`,
    )
    await writeFile(
      join(dir, name, 'SOP.md'),
      `# ${name}\n\n## Steps\n\n1. **Pause**\n   - call: {"tool":"wait","args":{"ms":0}}\n`,
    )
  }
}

/** The console's session cookie, from a one-time link as console.js signs in with it. */
async function signIn(link: string): Promise<string> {
  const u = new URL(link)
  const token = decodeURIComponent(u.hash.slice('#token='.length))
  const res = await fetch(`${u.origin}/login/link`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: u.origin },
    body: JSON.stringify({ token }),
  })
  const cookie = res.headers.get('set-cookie')
  if (res.status !== 200 || !cookie) throw new Error(`sign-in failed: ${res.status}`)
  return cookie.split(';')[0] as string
}

// ---- 1. idle RSS, console off and on --------------------------------------------------------

async function idleRss(
  entry: string,
  sopsDir: string,
  consoleOn: boolean,
  dir: string,
): Promise<{ idle: number; visited: number }> {
  const home = await mkdtemp(join(dir, 'home-'))
  await writeFile(
    join(home, 'hub.toml'),
    `[hub]\nsops_dir = "${sopsDir}"\nlog_level = "warn"\n[broker]\nport = 0\n[webhook]\nport = 0\n[api]\nport = 0\n[console]\n${consoleOn ? 'port = 0' : 'enabled = false'}\n`,
  )
  const child = spawn(process.execPath, ['--max-semi-space-size=1', entry, 'hub', '--log-level', 'info'], {
    cwd: root,
    env: { ...process.env, SVC_HOME: home, MALLOC_ARENA_MAX: '2' },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  try {
    const link = await new Promise<string | null>((resolve, reject) => {
      let text = ''
      child.stdout.on('data', (d: Buffer) => {
        text += d.toString()
        const m = /sign in once with (\S+)/.exec(text)
        if (m) resolve(m[1] as string)
        if (!consoleOn && text.includes('"hub started"')) resolve(null)
      })
      child.on('exit', (code) => reject(new Error(`hub exited (${code})`)))
    })
    child.stdout.resume()
    await sleep(15_000)
    const idle = rssOf(child.pid as number)
    if (!link) return { idle, visited: Number.NaN }
    const cookie = await signIn(link)
    const origin = new URL(link).origin
    for (const p of ['/', '/approvals', '/runs', '/runs?state=failed', '/nothing'])
      await (await fetch(origin + p, { headers: { cookie, accept: 'text/html' } })).text()
    await sleep(10_000)
    return { idle, visited: rssOf(child.pid as number) }
  } finally {
    const exited = new Promise((r) => child.once('exit', r))
    process.kill(child.pid as number, 'SIGTERM')
    await exited
  }
}

// ---- 2. the Runs page with 100,000 runs ----------------------------------------------------

async function runsPage(dir: string): Promise<void> {
  const home = await mkdtemp(join(dir, 'runs-'))
  const dataDir = join(home, 'data')
  const t0 = performance.now()
  await writeManyRuns(join(dataDir, 'engine'), { n: RUNS })
  out(
    `fixture   ${RUNS.toLocaleString('en')} runs written in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
  )
  const env = { ...process.env, SVC_HOME: home }
  const cfg = parseConfig(
    `[hub]\nsops_dir = "${join(home, 'sops')}"\ndata_dir = "${dataDir}"\n[broker]\nport = 0\n[webhook]\nenabled = false\n[api]\nport = 0\n[console]\nport = 0\n`,
    null,
    env,
  )
  if (!cfg.ok) throw new Error(cfg.error)
  const hub = await startHub(cfg.config, silentLog, realParts(env, cfg.config))
  try {
    const cookie = await signIn(hub.console!.loginLink())
    const read = await readApiToken(svcPaths(env).apiToken)
    if (!read.ok) throw new Error(read.error)
    const token = read.value
    const first = (await hub.engine.queryRuns({ limit: 50 })).next as string
    // Day 40 of the fixture's history (runs a minute apart from 2026-10-01).
    const from = new Date(Date.UTC(2026, 10, 9, 12)).toISOString()
    const to = new Date(Date.UTC(2026, 10, 9, 18)).toISOString()
    const cases: [string, string][] = [
      ['newest page', ''],
      ['by SOP', 'sop=door-open'],
      ['by state (failed)', 'state=failed'],
      ['older page (cursor)', `cursor=${encodeURIComponent(first)}`],
      ['time window', `since=${from}&until=${to}`],
    ]
    out(`runs page ${RUNS.toLocaleString('en')} runs, ${REQUESTS} requests each, console and API alternated`)
    for (const [name, q] of cases) {
      const page: number[] = []
      const api: number[] = []
      let bytes = 0
      for (let i = 0; i < REQUESTS + 20; i++) {
        const a = performance.now()
        const r1 = await fetch(`${hub.console!.url}/runs${q ? `?${q}` : ''}`, { headers: { cookie } })
        const body = await r1.text()
        const b = performance.now()
        const r2 = await fetch(`${hub.apiUrl}/sop/runs?limit=50${q ? `&${q}` : ''}`, {
          headers: { authorization: `Bearer ${token}` },
        })
        await r2.text()
        const c = performance.now()
        if (r1.status !== 200 || r2.status !== 200) throw new Error(`${name}: ${r1.status} / ${r2.status}`)
        if (i >= 20) {
          page.push(b - a)
          api.push(c - b)
          bytes = body.length
        }
      }
      out(
        `  ${name.padEnd(20)} page p50 ${ms(pct(page, 50))} p99 ${ms(pct(page, 99))}  |  API p50 ${ms(pct(api, 50))} p99 ${ms(pct(api, 99))}  |  ratio p50 ${(pct(page, 50) / pct(api, 50)).toFixed(2)}x  (page ${(bytes / 1024).toFixed(0)} KiB)`,
      )
    }
    const overview: number[] = []
    for (let i = 0; i < 60; i++) {
      const a = performance.now()
      await (await fetch(`${hub.console!.url}/`, { headers: { cookie } })).text()
      if (i >= 10) overview.push(performance.now() - a)
    }
    out(
      `  ${'overview page'.padEnd(20)} p50 ${ms(pct(overview, 50))} p99 ${ms(pct(overview, 99))}  (runs today by state, ${hub.engine.pending().length} parked runs)`,
    )
  } finally {
    await hub.close()
  }
}

// ---- 3. SSE fan-out --------------------------------------------------------------------------

async function fanOut(dir: string): Promise<void> {
  const home = await mkdtemp(join(dir, 'sse-'))
  const env = { ...process.env, SVC_HOME: home }
  const cfg = parseConfig(
    `[hub]\nsops_dir = "${join(home, 'sops')}"\ndata_dir = "${join(home, 'data')}"\n[broker]\nport = 0\n[webhook]\nenabled = false\n[console]\nport = 0\n[[boards]]\nname = "vend1"\nport = "/dev/svc-sim-vend1"\nsimulate = true\nheartbeat_ms = 0\n`,
    null,
    env,
  )
  if (!cfg.ok) throw new Error(cfg.error)
  let bridge: ReturnType<typeof createSimulatingBridge> | undefined
  const hub = await startHub(cfg.config, silentLog, {
    console: realParts(env).console!,
    createBridge: (b) => {
      bridge = createSimulatingBridge({
        ...b,
        boards: b.boards.map((x) => ({ ...x, simulate: { rate: 0 } })),
      })
      return bridge
    },
  })
  try {
    const sim = bridge!.simulated('vend1')!
    while (bridge!.stats().boards.vend1?.state !== 'online') await sleep(20)
    const cookie = await signIn(hub.console!.loginLink())
    /** RATE events/s for WINDOW_MS: 10 every 50 ms. Returns the hub's CPU share and events sent. */
    const drive = async (): Promise<{ cpu: number; events: number }> => {
      const before = bridge!.stats().boards.vend1!.published
      const c0 = process.cpuUsage()
      const t0 = performance.now()
      const per = RATE / 20
      for (let k = 0; performance.now() - t0 < WINDOW_MS; k++) {
        sim.emitEvents(per)
        const next = t0 + (k + 1) * 50
        await sleep(Math.max(0, next - performance.now()))
      }
      const wall = performance.now() - t0
      const c = process.cpuUsage(c0)
      return {
        cpu: (c.user + c.system) / 1000 / wall,
        events: bridge!.stats().boards.vend1!.published - before,
      }
    }
    const rounds: { consoles: number; cpu: number; events: number; lags: number[]; delivered: number }[] = []
    for (const consoles of [0, FANOUT, 0, FANOUT]) {
      if (consoles === 0) {
        const r = await drive()
        rounds.push({ consoles, ...r, lags: [], delivered: 0 })
        continue
      }
      const child = spawn(
        process.execPath,
        [
          '--import',
          'tsx',
          join(root, 'bench/fixtures/sse-clients.ts'),
          hub.console!.url,
          cookie,
          String(consoles),
        ],
        { cwd: root, stdio: ['pipe', 'pipe', 'inherit'] },
      )
      let text = ''
      child.stdout.on('data', (d: Buffer) => (text += d.toString()))
      while (!text.includes('open\n')) await sleep(20)
      const r = await drive()
      await sleep(500)
      const done = new Promise((res) => child.once('exit', res))
      child.stdin.end()
      await done
      const got = JSON.parse(text.split('\n').find((l) => l.startsWith('{')) as string) as {
        count: number
        lags: number[]
      }
      rounds.push({ consoles, ...r, lags: got.lags, delivered: got.count })
    }
    out(
      `sse       ${RATE} board events/s for ${WINDOW_MS / 1000} s through the bridge and broker, rounds alternated`,
    )
    for (const r of rounds)
      out(
        `  ${String(r.consoles).padStart(2)} consoles: hub CPU ${(r.cpu * 100).toFixed(1)}% of a core, ${r.events} events${
          r.consoles
            ? `, ${r.delivered} deliveries (${((r.delivered / (r.events * r.consoles)) * 100).toFixed(1)}%), lag p50 ${ms(pct(r.lags, 50))} p99 ${ms(pct(r.lags, 99))}`
            : ' (baseline: nobody watching)'
        }`,
      )
  } finally {
    await hub.close()
  }
}

const parts = new Set((process.env.CONSOLE_BENCH ?? 'rss,runs,sse').split(','))
const dir = await mkdtemp(join(tmpdir(), 'svc-console-bench-'))
try {
  if (parts.has('rss')) await rssPart(dir)
  if (parts.has('runs')) await runsPage(dir)
  if (parts.has('sse')) await fanOut(dir)
} finally {
  await rm(dir, { recursive: true, force: true })
}

async function rssPart(dir: string): Promise<void> {
  const sopsDir = join(dir, 'sops')
  await writeSops(sopsDir, 10)
  const built = await buildDist(join(dir, 'dist'))
  if (!built.ok) throw new Error(built.error)
  const rss: { on: boolean; idle: number; visited: number }[] = []
  for (const on of [false, true, false, true])
    rss.push({ on, ...(await idleRss(built.entry, sopsDir, on, dir)) })
  const off = rss.filter((r) => !r.on).map((r) => r.idle)
  const on = rss.filter((r) => r.on).map((r) => r.idle)
  const visited = rss.filter((r) => r.on).map((r) => r.visited)
  out('idle RSS  bundled hub, 10 SOPs, semi-space 1 MB, MALLOC_ARENA_MAX=2, read 15 s after start')
  out(`  console off (baseline)  ${off.map(mb).join(', ')}`)
  out(
    `  console on              ${on.map(mb).join(', ')}  (${mb(Math.min(...on) - Math.min(...off))} lowest to lowest; aim ≤ +8 MB)`,
  )
  out(
    `  on, 10 s after a visit of each page  ${visited.map(mb).join(', ')}  (${mb(Math.min(...visited) - Math.min(...off))} over off, lowest to lowest)`,
  )
}
