// Applying the history log to LevelDB again (hub/engine/README.md, "The history log",
// "Rebuilding the index"): at every open, the batches past where LevelDB says it has applied
// (`catchUp`: a crash, or a failed write, left them out); and when the index is stale or lost,
// every batch the log holds, for the run index's keys only (`rebuildIndex`). Both derive from a
// run's records the keys never written to the log (`derived`).
import type { RunSummary } from '../../sops/hub-engine.ts'
import type { BatchOp } from './group-commit.ts'
import type { Delta } from './run-deltas.ts'
import { INDEX, INDEX_MARKER, INDEX_VERSION } from './run-index.ts'
import type { StagedOp } from './staged.ts'
import type { StoreContext } from './store-context.ts'
import {
  APPLIED,
  FIN,
  FIRST,
  MARK,
  OPEN,
  RUN,
  deltaKey,
  inLog,
  indexOp,
  locatorText,
  logOnly,
} from './store-layout.ts'

/** Keys the log carries for the runs, cleared and applied again by `rebuildIndex`. */
const indexPart = (key: string) => inLog(key) || key.startsWith(OPEN)

/**
 * The local operations (never logged: BatchOp `local`) a logged one implies: a run's first
 * record puts its `open!` marker; a finished run's summary removes it.
 */
function derived(op: BatchOp): BatchOp[] {
  if (op.type !== 'put') return []
  if (op.key.startsWith(RUN) && op.key.endsWith(FIRST)) {
    const head = (JSON.parse(op.value) as Delta).head
    return head ? [{ type: 'put', key: OPEN + head.id, value: '' }] : []
  }
  if (op.key.startsWith(FIN)) return [{ type: 'del', key: OPEN + (JSON.parse(op.value) as RunSummary).id }]
  return []
}

/**
 * Applies to LevelDB the log's batches it has not got: those after `meta!applied`, which a
 * crash (or an I/O error between the log's sync and LevelDB's write) may have left out.
 */
export async function catchUp(ctx: StoreContext): Promise<{ applied: string; end: string } | null> {
  const v = await ctx.db.get(APPLIED)
  const [seg, off] = v ? v.split(':').map(Number) : [0, 0]
  // LevelDB only ever hears of synced batches: past the log's end, the disk lost synced bytes.
  const end = ctx.log.position()
  if (seg! > end.seg || (seg === end.seg && off! > end.off))
    return { applied: v!, end: `${end.seg}:${end.off}` }
  for (const s of ctx.log.segments()) {
    if (s.n < seg!) continue
    for (const b of await ctx.log.scan(s.n, s.n === seg ? off : 0)) await applyScanned(ctx, s.n, b.ops, b.end)
  }
  return null
}

/**
 * Applies a batch read back from the log, with what its records imply (`derived`); `only`:
 * those keys alone (a rebuild of the index), and `meta!applied` left as it is.
 */
function applyScanned(
  ctx: StoreContext,
  seg: number,
  scanned: readonly { op: BatchOp; off: number; len: number; inner?: { off: number; len: number } }[],
  end: number,
  only?: (key: string) => boolean,
): Promise<void> {
  const ops: StagedOp[] = []
  // What `derived` gives is never in the log, so the locator is only ever the record's own.
  for (const s of scanned)
    for (const op of [s.op, ...derived(s.op)])
      if (!logOnly(op.key) && (!only || only(op.key)))
        ops.push(indexOp(op, () => locatorText(seg, s.off, s.len, s.inner)))
  return ctx.writeIndex(ops, only ? null : `${seg}:${end}`)
}

/**
 * Builds the run index again from the log alone: the run records' locators, the `open!`
 * markers and the index keys are cleared, then every batch the log still holds is applied
 * again for those keys. The marker is unset first and set last: a crash part-way leaves the
 * index marked stale, and the next open starts again. `lostTo`: the log ends before where
 * LevelDB said it had applied (`onAheadOfLog`); the MQTT marks, whose locators may point past
 * the end, are cleared and applied again too, and LevelDB is told it has applied the log up to
 * `lostTo`, its end.
 */
export async function rebuildIndex(ctx: StoreContext, lostTo?: string): Promise<void> {
  await ctx.settle()
  await ctx.db.put(INDEX_MARKER, 'rebuilding', { sync: true })
  // The finished runs' files are built again from the log once LevelDB has the runs again.
  await ctx.index.clear()
  const cleared = lostTo === undefined ? [RUN, FIN, OPEN, INDEX] : [RUN, FIN, OPEN, INDEX, MARK]
  for (const p of cleared) await ctx.db.clear({ gte: p, lt: `${p}\xff` })
  const segments = ctx.log.segments()
  for (const [i, s] of segments.entries()) {
    for (const b of await ctx.log.scan(s.n)) await applyScanned(ctx, s.n, b.ops, b.end, indexPart)
    ctx.opts.onRebuild?.(i + 1, segments.length)
  }
  await dropHeadless(ctx)
  if (lostTo !== undefined) await ctx.db.put(APPLIED, lostTo)
  await ctx.index.open()
  await ctx.db.put(INDEX_MARKER, INDEX_VERSION, { sync: true })
}

/**
 * After a rebuild: a run whose first record was in a segment retention dropped (its later
 * records and summary in a kept one) was removed by retention; its keys go again.
 */
async function dropHeadless(ctx: StoreContext): Promise<void> {
  const headless = new Set<string>()
  let last = ''
  for await (const k of ctx.db.keys({ gt: RUN, lt: `${RUN}\xff` })) {
    const id = k.slice(RUN.length, k.lastIndexOf('!'))
    if (id === last) continue
    last = id
    if (!k.endsWith(FIRST)) headless.add(id)
  }
  for await (const k of ctx.db.keys({ gt: FIN, lt: `${FIN}\xff` }))
    if ((await ctx.db.get(deltaKey(k.slice(FIN.length), 0))) === undefined) headless.add(k.slice(FIN.length))
  for (const id of headless) {
    const gone = [FIN + id, OPEN + id]
    for await (const k of ctx.db.keys({ gt: `${RUN}${id}!`, lt: `${RUN}${id}!\xff` })) gone.push(k)
    await ctx.db.batch(gone.map((key) => ({ type: 'del' as const, key })))
  }
}
