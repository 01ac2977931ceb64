// SOP runtime throughput and latency. Prints, in one process:
//   baseline: raw LevelDB `sync: true` batches/s (one ~1 KiB put each, one after another)
//   floor: the disk alone, a 1 KiB append and fdatasync(2) (what any durable write here costs)
//   runs/s of a 5-step deterministic SOP with in-memory tools and durable run records
//   trigger → first-step latency p50/p99 (one run at a time, durable)
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { fsyncFloor } from './disk-floor.ts'
import { loadLine } from './load.ts'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { Level } from 'level'
import { Type } from 'typebox'
import { createEngine } from '../hub/engine/index.ts'
import { blankStep } from '../sops/blank-step.ts'
import type { Sop, Step } from '../sops/types.ts'
import type { Tool, ToolRegistry } from '../tools/types.ts'

const origin = { file: 'bench', line: 1 }
function step(n: number, args: object): Step {
  return blankStep(n, `s${n}`, origin, { calls: [{ tool: 'inc', args: args as never, origin }] })
}
function sop(name: string, maxConcurrent: number): Sop {
  return {
    name,
    description: 'bench',
    priority: 'normal',
    executionMode: 'deterministic',
    cooldownSecs: 0,
    maxConcurrent,
    admissionPolicy: 'parallel',
    triggers: [],
    dir: '',
    tomlPath: '',
    mdPath: '',
    steps: [
      step(1, { n: 1 }),
      step(2, { n: '{{steps.1.n}}' }),
      step(3, { n: '{{steps.2.n}}' }),
      step(4, { n: '{{steps.3.n}}' }),
      step(5, { n: '{{steps.4.n}}' }),
    ],
  }
}
let firstStepAt = 0
const inc: Tool = {
  name: 'inc',
  description: 'returns n+1',
  schema: Type.Object({ n: Type.Number() }),
  run: async (args, ctx) => {
    if (ctx.step === 1 && firstStepAt === 0) firstStepAt = performance.now()
    return { ok: true, output: { n: (args as { n: number }).n + 1 } }
  },
}
const tools: ToolRegistry = new Map([[inc.name, inc]])

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!
}

/** One sync batch after another: the rate, and each batch's latency (the floor under a durable first step). */
async function baseline(dir: string, seconds: number): Promise<{ rate: number; p50: number; p99: number }> {
  const db = new Level<string, string>(join(dir, 'raw'), { valueEncoding: 'utf8' })
  await db.open()
  const value = 'x'.repeat(1024)
  const samples: number[] = []
  const end = performance.now() + seconds * 1000
  while (performance.now() < end) {
    const t0 = performance.now()
    await db.batch([{ type: 'put', key: `k${samples.length % 1000}`, value }], { sync: true })
    samples.push(performance.now() - t0)
  }
  await db.close()
  const rate = samples.length / seconds
  samples.sort((a, b) => a - b)
  return { rate, p50: pct(samples, 0.5), p99: pct(samples, 0.99) }
}

async function throughput(
  dir: string,
  total: number,
  inFlight: number,
): Promise<{ rate: number; batches: number; ops: number; busyMs: number; secs: number }> {
  const s = sop('bench', inFlight)
  const engine = await createEngine({ sops: [s], tools, dbPath: join(dir, 'tp') })
  const t0 = performance.now()
  let fired = 0
  const ev = () => ({ type: 'manual' as const, source: 'bench', payload: { i: fired }, at: Date.now() })
  // Keep `inFlight` runs admitted at once; the rest are deferred durably and run as slots free.
  const waves: Promise<unknown>[] = []
  while (fired < total) {
    waves.push(engine.trigger('bench', ev()))
    fired++
    if (waves.length >= inFlight) await Promise.all(waves.splice(0))
  }
  await Promise.all(waves)
  await engine.idle()
  const secs = (performance.now() - t0) / 1000
  const done = (await engine.listRuns({ state: 'completed', limit: total + 1 })).length
  if (done !== total) throw new Error(`only ${done}/${total} runs completed`)
  const stats = (engine as unknown as { writeStats: { batches: number; ops: number; busyMs: number } })
    .writeStats
  await engine.close()
  return { rate: total / secs, secs, ...stats }
}

async function latency(dir: string, n: number): Promise<{ p50: number; p99: number }> {
  const engine = await createEngine({ sops: [sop('lat', 1)], tools, dbPath: join(dir, 'lat') })
  const samples: number[] = []
  for (let i = 0; i < n; i++) {
    firstStepAt = 0
    const t0 = performance.now()
    await engine.trigger('lat', { type: 'manual', source: 'bench', payload: { i }, at: Date.now() })
    await engine.idle()
    if (firstStepAt === 0) throw new Error('first step did not run')
    samples.push(firstStepAt - t0)
  }
  await engine.close()
  samples.sort((a, b) => a - b)
  return { p50: pct(samples, 0.5), p99: pct(samples, 0.99) }
}

const dir = await mkdtemp(join(tmpdir(), 'svc-engine-bench-'))
try {
  const raw = await baseline(dir, 3)
  const floor = fsyncFloor(dir, 2000)
  const total = Number(process.env.RUNS ?? 10000)
  const inFlight = Number(process.env.IN_FLIGHT ?? 256)
  const tp = await throughput(dir, total, inFlight)
  const lat = await latency(dir, 2000)
  console.log(
    `baseline  raw LevelDB sync batches        ${raw.rate.toFixed(0).padStart(8)} batches/s  (one 1 KiB put each; latency p50 ${raw.p50.toFixed(3)} ms, p99 ${raw.p99.toFixed(3)} ms)`,
  )
  console.log(
    `floor     1 KiB append + fdatasync        p50 ${floor.p50.toFixed(3)} ms, p99 ${floor.p99.toFixed(3)} ms (the disk alone, on the main thread: under any synced write here)`,
  )
  console.log(
    `engine    5-step deterministic runs       ${tp.rate.toFixed(0).padStart(8)} runs/s     (${(tp.rate / raw.rate).toFixed(2)}x the sync-batch rate; ${tp.batches} sync batches for ${tp.ops} writes, ${total} runs, ${inFlight} in flight; ${((tp.busyMs / 1000 / tp.secs) * 100).toFixed(0)}% of the time in batch writes)`,
  )
  console.log(
    `engine    trigger → first step latency    p50 ${lat.p50.toFixed(3)} ms, p99 ${lat.p99.toFixed(3)} ms (one run at a time; the run record is synced before the first step, so the sync-batch latency above is its floor)`,
  )
  console.log(loadLine())
} finally {
  await rm(dir, { recursive: true, force: true })
}
