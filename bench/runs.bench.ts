// Run history at 100,000 stored runs: a page of 50 newest-first, by the run index, beside the
// scan it replaced, in one process over the same store. Prints p50/p99 for four pages:
//   newest       no filter
//   by SOP       one SOP of four
//   by state     `failed` (one run in ten)
//   deep page    by cursor, 90% of the way down the history
// each (a) through the local JSON API (`GET /sop/runs`, loopback, bearer token), (b) the index
// in-process (EngineStore.queryRuns, the parked runs given as the engine's memory), and (c) the baseline: the scan `listRuns` was before the
// index (every `fin!` summary read, filtered, sorted), in-process over the same store.
//
//   npm run bench -- runs            (RUNS=100000 by default)
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { loadLine } from './load.ts'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { createLocalApi, issueApiToken } from '../hub/api/index.ts'
import { createEngine } from '../hub/engine/index.ts'
import { cursorAt, position } from '../hub/engine/run-index.ts'
import { EngineStore } from '../hub/engine/store.ts'
import type { RunFilter, RunSummary } from '../sops/hub-engine.ts'
import { MANY_RUNS_SOPS, writeManyRuns } from './fixtures/many-runs.ts'

const RUNS = Number(process.env.RUNS ?? 100_000)
const PAGE = 50
const START = Date.UTC(2026, 9, 1)
const STEP = 60_000

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!
}

async function timeIt(n: number, fn: () => Promise<number>): Promise<{ p50: number; p99: number }> {
  const samples: number[] = []
  for (let i = 0; i < n; i++) {
    const t0 = performance.now()
    const got = await fn()
    samples.push(performance.now() - t0)
    if (got !== PAGE) throw new Error(`a page of ${got} runs, not ${PAGE}`)
  }
  samples.sort((a, b) => a - b)
  return { p50: pct(samples, 0.5), p99: pct(samples, 0.99) }
}

/** The scan `listRuns`/`queryRuns` were before the index, as they were written. */
async function oldScan(store: EngineStore, f: RunFilter & { afterId?: string }): Promise<RunSummary[]> {
  const out = new Map<string, RunSummary>()
  for await (const v of store.finished()) {
    const r = v as RunSummary
    if (f.sop !== undefined && r.sop !== f.sop) continue
    out.set(r.id, r)
  }
  let list = [...out.values()]
  if (f.state !== undefined) list = list.filter((r) => r.state === f.state)
  list.sort((a, b) => b.createdAt - a.createdAt)
  const start = f.afterId ? list.findIndex((r) => r.id === f.afterId) + 1 : 0
  return list.slice(start, start + PAGE)
}

const dir = await mkdtemp(join(tmpdir(), 'svc-runs-bench-'))
try {
  const t0 = performance.now()
  const ids = await writeManyRuns(join(dir, 'engine'), { n: RUNS, start: START, stepMs: STEP })
  const writeSecs = (performance.now() - t0) / 1000
  // The deep page starts after run `deep`: 90% of the way down, newest first.
  const deep = Math.floor(RUNS * 0.1)
  const deepCursor = cursorAt(position({ createdAt: START + deep * STEP, id: ids[deep]! }))
  const queries: { name: string; filter: RunFilter; afterId?: string }[] = [
    { name: 'newest', filter: {} },
    { name: 'by SOP', filter: { sop: MANY_RUNS_SOPS[1]! } },
    { name: 'by state', filter: { state: 'failed' } },
    { name: 'deep page', filter: { cursor: deepCursor }, afterId: ids[deep]! },
  ]

  // (b) and (c): in-process, the store alone.
  const store = await EngineStore.open(join(dir, 'engine'))
  // The parked runs, as the engine holds them in memory (read once, not per page).
  const live = await store.openSummaries()
  const scan: Record<string, { p50: number; p99: number }> = {}
  const index: Record<string, { p50: number; p99: number }> = {}
  for (const q of queries) {
    scan[q.name] = await timeIt(
      Number(process.env.SCANS ?? 15),
      async () =>
        (await oldScan(store, { ...q.filter, ...(q.afterId ? { afterId: q.afterId } : {}) })).length,
    )
    index[q.name] = await timeIt(
      300,
      async () => (await store.queryRuns({ ...q.filter, limit: PAGE }, live)).runs.length,
    )
  }
  await store.close()

  // (a): the hub's engine (its ~200 parked runs live in memory) behind the local API.
  const engine = await createEngine({ sops: [], tools: new Map(), dbPath: join(dir, 'engine') })
  const token = await issueApiToken(join(dir, 'token'))
  const app = createLocalApi({ engine, token })
  const url = await app.listen({ host: '127.0.0.1', port: 0 })
  const api: Record<string, { p50: number; p99: number }> = {}
  try {
    for (const q of queries) {
      const qs = new URLSearchParams({ limit: String(PAGE) })
      for (const [k, v] of Object.entries(q.filter)) qs.set(k, String(v))
      api[q.name] = await timeIt(300, async () => {
        const res = await fetch(`${url}/sop/runs?${qs}`, { headers: { authorization: `Bearer ${token}` } })
        return ((await res.json()) as { runs: unknown[] }).runs.length
      })
    }
  } finally {
    await app.close()
    await engine.close()
  }

  const ms = (x: number) => `${x.toFixed(2)} ms`
  console.log(
    `${RUNS} stored runs written by bench/fixtures/many-runs.ts in ${writeSecs.toFixed(1)} s; pages of ${PAGE}`,
  )
  console.log(
    'page        local API p50 / p99      index in-process p50 / p99   baseline: old scan p50 / p99   API vs scan (p50)',
  )
  for (const q of queries) {
    const a = api[q.name]!
    const b = index[q.name]!
    const c = scan[q.name]!
    console.log(
      `${q.name.padEnd(10)}  ${`${ms(a.p50)} / ${ms(a.p99)}`.padEnd(23)}  ${`${ms(b.p50)} / ${ms(b.p99)}`.padEnd(27)}  ${`${ms(c.p50)} / ${ms(c.p99)}`.padEnd(29)}  ${(c.p50 / a.p50).toFixed(0)}x faster`,
    )
  }
  console.log(loadLine())
} finally {
  await rm(dir, { recursive: true, force: true })
}
