// Retention at a site's pace and in a burst (hub/engine/README.md, "Retention" and "The write
// budget"): a pass with no segment to drop writes nothing, so the minute's look costs the card no
// page and does not hurry LevelDB's staged share; the admission records go with their segment;
// and retention looks each time a segment fills, so a burst does not outrun the size bound until
// the next minute's look.
import { readdir, stat } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { createEngine } from '../../hub/engine/index.ts'
import type { HistoryBounds } from '../../hub/engine/log/retention.ts'
import type { EngineStore } from '../../hub/engine/store.ts'
import { STAGE_MS } from '../../hub/engine/store-context.ts'
import { tempDir } from '../helpers/tmp.ts'
import { call, event, incompressible, memoryTools, sop, step } from './helpers.ts'

const DAY = 86_400_000
const BOUNDS: HistoryBounds = { maxAgeMs: DAY, maxBytes: 1 << 30, segmentBytes: 64 * 1024 }
const S = sop({
  name: 'w',
  maxConcurrent: 100,
  steps: [step(1, { calls: [call('echo', { pad: incompressible(800) })] })],
})

/** LevelDB's own files (its log, tables, manifest) by name, with their sizes. */
async function leveldbFiles(dir: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {}
  for (const e of await readdir(dir, { withFileTypes: true }))
    if (e.isFile() && !e.name.startsWith('LOG')) out[e.name] = (await stat(join(dir, e.name))).size
  return out
}

/** By default LevelDB's share waits for a read, a close or a retention pass that writes. */
async function start(dir: string, clock: { now: number }, history = BOUNDS, stageMs = 3_600_000) {
  const engine = await createEngine({
    sops: [S],
    tools: memoryTools().registry,
    dbPath: dir,
    history,
    now: () => clock.now,
    stageMs,
  })
  return { engine, store: (engine as unknown as { store: EngineStore }).store }
}

t.test('a retention pass with no segment to drop writes nothing', async (t) => {
  const dir = join(await tempDir(t, 'svc-retention-quiet-'), 'engine')
  const clock = { now: Date.UTC(2026, 10, 1) }
  const { engine, store } = await start(dir, clock)
  t.teardown(() => engine.close())
  for (let i = 0; i < 5; i++) await engine.trigger('w', event({ i }, clock.now))
  await engine.idle()
  await store.prune()
  // Runs staged for LevelDB, and a pass that finds nothing past its bounds.
  for (let i = 0; i < 3; i++) await engine.trigger('w', event({ i }, clock.now))
  await engine.idle()
  const before = await leveldbFiles(dir)
  await store.prune()
  t.same(await leveldbFiles(dir), before, 'LevelDB was not written')
  t.equal((await engine.queryRuns({ limit: 100 })).runs.length, 8, 'and every run is there')
})

t.test('admission records go with their segment', async (t) => {
  const dir = join(await tempDir(t, 'svc-retention-adm-'), 'engine')
  const clock = { now: Date.UTC(2026, 10, 1) }
  const { engine, store } = await start(dir, clock)
  t.teardown(() => engine.close())
  const old: string[] = []
  for (let i = 0; i < 300; i++) old.push((await engine.trigger('w', event({ i }, clock.now))).runId!)
  await engine.idle()
  t.equal((await engine.admissions(1000)).length, 300, 'a record for each trigger')
  const segments = (await readdir(join(dir, 'history'))).filter((f) => f.endsWith('.seg'))
  t.ok(segments.length > 2, `the runs fill ${segments.length} segments`)
  clock.now += 2 * DAY
  const kept = (await engine.trigger('w', event({ late: true }, clock.now))).runId!
  await engine.idle()
  await store.prune()
  const left = (await readdir(join(dir, 'history'))).filter((f) => f.endsWith('.seg'))
  t.ok(left.length < segments.length, `segments dropped (${segments.length} → ${left.length})`)
  t.equal((await engine.getRun(kept))?.state, 'completed', 'the late run is kept')
  const recs = await engine.admissions(1000)
  t.ok(recs.length < 301, `records went with the segments (${recs.length} of 301 left)`)
  t.equal(recs.at(-1)?.runId, kept, "the late run's record is kept")
  for (const r of recs)
    if (r.runId !== kept) t.ok(await engine.getRun(r.runId!), 'an old record left names a run still kept')
  const gone = old.filter((id) => !recs.some((r) => r.runId === id))
  t.ok(gone.length > 0, 'and the runs dropped have no record')
  for (const id of gone.slice(0, 5)) t.equal(await engine.getRun(id), undefined, 'their runs are gone')
})

t.test('the size bound holds through a burst, with no pass asked for', async (t) => {
  const dir = join(await tempDir(t, 'svc-retention-burst-'), 'engine')
  const clock = { now: Date.UTC(2026, 10, 1) }
  const bounds: HistoryBounds = { ...BOUNDS, maxAgeMs: 365 * DAY, maxBytes: 256 * 1024 }
  const { engine, store } = await start(dir, clock, bounds, STAGE_MS)
  t.teardown(() => engine.close())
  const ids: string[] = []
  for (let i = 0; i < 600; i++) ids.push((await engine.trigger('w', event({ i }, clock.now))).runId!)
  await engine.idle()
  // The passes the filled segments started, waited out; the timer's would be a minute away.
  const ctx = (store as unknown as { ctx: { pruning: Promise<void> | null } }).ctx
  // A pass the last fill started begins once the one before it is through.
  await new Promise((resolve) => setImmediate(resolve))
  while (ctx.pruning) {
    await ctx.pruning
    await new Promise((resolve) => setImmediate(resolve))
  }
  let bytes = 0
  for (const f of await readdir(join(dir, 'history'))) bytes += (await stat(join(dir, 'history', f))).size
  t.ok(
    bytes <= bounds.maxBytes + 2 * bounds.segmentBytes,
    `the log is within a segment or two of its bound (${bytes} bytes, bound ${bounds.maxBytes})`,
  )
  t.equal(await engine.getRun(ids[0]!), undefined, 'the first run is gone')
  t.equal((await engine.getRun(ids.at(-1)!))?.state, 'completed', 'the last is kept')
})
