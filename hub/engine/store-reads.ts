// What the engine store answers (hub/engine/README.md, "The history log"): a run replayed from
// its deltas, pages of the run index, the unfinished runs a start takes up, the kept triggers,
// the admission records, the once-only marks. Each read of LevelDB first waits for what is staged
// to reach it (`settle`), and the run reads for a reopen under way; values LevelDB holds as
// locators are read from the log, and the admission records from the log alone.
import type { RunFilter, RunPage, RunSummary } from '../../sops/hub-engine.ts'
import type { AdmissionDecision, AdmissionRecord, KeptTrigger } from '../../sops/engine-api.ts'
import type { RunRecord } from '../../sops/run/record.ts'
import { fold, writtenOf } from './run-deltas.ts'
import { idOfPosition } from './finished-index.ts'
import { type IndexEntry, splitRecs } from './log/index-file.ts'
import { byPosition, checkFilter, cursorAt, indexedState, position } from './run-index.ts'
import type { OnceMark } from './store-types.ts'
import type { StoreContext } from './store-context.ts'
import { FIN, KEPT, LAST, MARK, ONCE, OPEN, RUN, deltaKey, logOnly, parseLocator } from './store-layout.ts'
import { summary } from './summary.ts'

/** The fingerprinted marks left by the last run of the hub (not yet forgotten). */
export async function marks(ctx: StoreContext): Promise<Map<string, OnceMark[]>> {
  await ctx.settle()
  const out = new Map<string, OnceMark[]>()
  for await (const [k, v] of ctx.db.iterator({ gt: MARK, lt: MARK + '\xff' })) {
    // A mark in a segment retention dropped is far older than the 30 s a mark is kept for.
    const text = await ctx.valueOf(v)
    if (text !== undefined) out.set(k.slice(MARK.length), JSON.parse(text) as OnceMark[])
  }
  return out
}

export async function onceDecision(ctx: StoreContext, key: string): Promise<AdmissionDecision | undefined> {
  const staged = ctx.staged.get(ONCE + key)
  const v = staged !== undefined ? (staged ?? undefined) : await ctx.db.get(ONCE + key)
  return v === undefined ? undefined : (JSON.parse(v) as AdmissionDecision)
}

/**
 * Replays a run's deltas; also returns the next delta's number and the keys it read, which are
 * exactly the records the run is replayed from.
 */
export async function replay(
  ctx: StoreContext,
  id: string,
): Promise<{ run: RunRecord; deltas: number; keys: string[]; firstSeg?: number } | undefined> {
  if (ctx.reopening) await ctx.reopening
  await ctx.settle()
  const stored: string[] = []
  const keys: string[] = []
  for await (const [k, v] of ctx.db.iterator({ gt: `${RUN}${id}!`, lt: `${RUN}${id}!\xff` })) {
    stored.push(v)
    keys.push(k)
  }
  // A finished run LevelDB holds nothing of: the run index locates its records.
  if (stored.length === 0) return located(ctx, id)
  const r = fold(keys, await Promise.all(stored.map((v) => ctx.valueOf(v))))
  // Where its first record is, for the finished runs' index when it finishes (finished-index.ts).
  return r && stored[0]?.startsWith('@') ? { ...r, firstSeg: parseLocator(stored[0]).seg } : r
}

/** A finished run whose records only the run index locates (finished-index.ts `find`). */
async function located(ctx: StoreContext, id: string): Promise<ReturnType<typeof fold>> {
  const e = await ctx.index.find(id)
  if (e?.recs === undefined) return undefined
  const { deltas } = splitRecs(e.recs)
  return fold(
    deltas.map((_, i) => deltaKey(id, i)),
    await Promise.all(deltas.map((v) => ctx.valueOf(v))),
  )
}

export async function getRun(ctx: StoreContext, id: string): Promise<RunRecord | undefined> {
  return (await replay(ctx, id))?.run
}

/**
 * A newest-first page from the run index. `live` are the runs not finished: the engine's
 * memory, which may be ahead of the store (their index entries are skipped and the memory's
 * version merged in); without it, the runs with an `open!` marker, from their records (a store
 * read with no engine). A run indexed but neither live nor finished (its finish being written)
 * is replayed from its deltas.
 */
export async function queryRuns(
  ctx: StoreContext,
  filter: RunFilter,
  live?: readonly RunSummary[],
): Promise<RunPage> {
  const { limit, lower, upper } = checkFilter(filter)
  if (ctx.reopening) await ctx.reopening
  await ctx.settle()
  live ??= await openSummaries(ctx)
  const liveIds = new Set<string>()
  const page: { pos: string; run?: RunSummary; id: string; recs?: string }[] = []
  for (const r of live) {
    liveIds.add(r.id)
    if (filter.sop !== undefined && r.sop !== filter.sop) continue
    if (filter.state !== undefined && r.state !== filter.state) continue
    const pos = position(r)
    if (pos >= lower && pos < upper) page.push({ pos, run: r, id: r.id })
  }
  // A state the index does not hold (not finished) is served by the live runs alone.
  if (filter.state === undefined || indexedState(filter.state)) {
    const q = { lower, upper, want: limit + 1, skip: liveIds }
    for (const e of await ctx.index.page({ ...filter, ...q }))
      page.push({ pos: e.pos, id: idOfPosition(e.pos), recs: e.recs })
  }
  page.sort((a, b) => byPosition(b.pos, a.pos))
  page.length = Math.min(page.length, limit + 1)
  const wanted = page.filter((p) => !p.run)
  const inDb = wanted.filter((p) => p.recs === undefined)
  const stored = new Map(
    (await ctx.db.getMany(inDb.map((p) => FIN + p.id))).map((v, i) => [inDb[i]!.id, v] as const),
  )
  const fin = await Promise.all(
    wanted.map((p) => ctx.valueOf(p.recs === undefined ? stored.get(p.id) : splitRecs(p.recs).summary)),
  )
  for (let i = 0; i < wanted.length; i++) {
    const v = fin[i]
    if (v !== undefined) wanted[i]!.run = JSON.parse(v) as RunSummary
    else {
      const r = await getRun(ctx, wanted[i]!.id)
      if (r) wanted[i]!.run = summary(r)
    }
  }
  const runs = page
    .slice(0, limit)
    .map((p) => p.run)
    .filter((r): r is RunSummary => r !== undefined)
  return { runs, next: page.length > limit ? cursorAt(page[limit - 1]!.pos) : null }
}

/** Summaries of the runs not finished, from their records (what the engine would hold in memory). */
export async function openSummaries(ctx: StoreContext): Promise<RunSummary[]> {
  await ctx.settle()
  const out: RunSummary[] = []
  for await (const k of ctx.db.keys({ gt: OPEN, lt: `${OPEN}\xff` })) {
    const r = await getRun(ctx, k.slice(OPEN.length))
    if (r) out.push(summary(r))
  }
  return out
}

/**
 * Summaries of the finished runs: the whole history read (the bench's baseline). Those LevelDB
 * holds in id order, then those the run index alone locates, oldest segment first.
 */
export async function* finished(ctx: StoreContext): AsyncGenerator<unknown> {
  await ctx.settle()
  for await (const v of ctx.db.values({ gt: FIN, lt: FIN + '\xff' })) {
    const text = await ctx.valueOf(v)
    if (text !== undefined) yield JSON.parse(text)
  }
  for await (const e of indexOnly(ctx)) {
    const text = await ctx.valueOf(splitRecs(e.recs!).summary)
    if (text !== undefined) yield JSON.parse(text)
  }
}

/**
 * The entries the run index alone locates whose run LevelDB does not hold as well (a replay of
 * the log after a crash puts a run's locators there again, `catchUp`), a chunk at a time.
 */
export async function* indexOnly(ctx: StoreContext): AsyncGenerator<IndexEntry> {
  let chunk: IndexEntry[] = []
  const unheld = async function* () {
    const held = await ctx.db.getMany(chunk.map((e) => FIN + idOfPosition(e.pos)))
    for (const [i, e] of chunk.entries()) if (held[i] === undefined) yield e
    chunk = []
  }
  for await (const e of ctx.index.located()) {
    chunk.push(e)
    if (chunk.length >= 512) yield* unheld()
  }
  yield* unheld()
}

/**
 * Full records of the runs that had not finished, remembered as written (after a restart);
 * `known` are left out (runs the engine holds, after a reopen).
 */
export async function unfinished(ctx: StoreContext, known?: ReadonlySet<string>): Promise<RunRecord[]> {
  await ctx.settle()
  const out: RunRecord[] = []
  for await (const k of ctx.db.keys({ gt: OPEN, lt: OPEN + '\xff' })) {
    if (known?.has(k.slice(OPEN.length))) continue
    const r = await replay(ctx, k.slice(OPEN.length))
    if (!r) continue
    out.push(r.run)
    ctx.written.set(r.run.id, { ...writtenOf(r.run, r.deltas), firstSeg: r.firstSeg })
  }
  return out
}

export async function kept(ctx: StoreContext): Promise<KeptTrigger[]> {
  await ctx.settle()
  const out: KeptTrigger[] = []
  for await (const v of ctx.db.values({ gt: KEPT, lt: KEPT + '\xff' })) out.push(JSON.parse(v) as KeptTrigger)
  return out
}

/** The newest `limit` admission records, oldest first, as the log holds them (`logOnly`). */
export async function admissions(ctx: StoreContext, limit = 1000): Promise<AdmissionRecord[]> {
  const out: AdmissionRecord[] = []
  // A record logged twice (`loggedAdmissions`) is given once.
  const seen = new Set<string>()
  for await (const [key, text] of loggedAdmissions(ctx, 'newest first')) {
    if (out.length >= limit) break
    if (seen.has(key)) continue
    seen.add(key)
    out.push(JSON.parse(text) as AdmissionRecord)
  }
  return out.reverse()
}

/**
 * Every admission record the log holds, key and JSON, a segment at a time: the order they were
 * written in, or its reverse. A record is logged once, but a crash while an older store's were
 * moved into the log (store-open.ts `logAdmissions`) may have logged some twice, under the same
 * key. A segment retention drops meanwhile gives nothing.
 */
export async function* loggedAdmissions(
  ctx: StoreContext,
  order: 'oldest first' | 'newest first',
): AsyncGenerator<[string, string]> {
  if (ctx.reopening) await ctx.reopening
  const segments = ctx.log.segments()
  if (order === 'newest first') segments.reverse()
  for (const s of segments) {
    const records: [string, string][] = []
    for (const b of await ctx.log.scan(s.n))
      for (const { op } of b.ops) if (op.type === 'put' && logOnly(op.key)) records.push([op.key, op.value])
    if (order === 'newest first') records.reverse()
    yield* records
  }
}

export async function lastFinished(ctx: StoreContext): Promise<Map<string, number>> {
  await ctx.settle()
  const out = new Map<string, number>()
  for await (const [k, v] of ctx.db.iterator({ gt: LAST, lt: LAST + '\xff' }))
    out.set(k.slice(LAST.length), Number(v))
  return out
}
