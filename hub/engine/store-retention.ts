// What the engine store forgets (hub/engine/README.md, "Retention"): a pass every
// `retentionEveryMs` drops the history log's segments past the bounds (log/retention.ts picks
// them), removing the finished runs whose first record was in one and carrying the unfinished
// ones on; the admission records, which the log alone holds, go with their segment. Once-only
// marks are forgotten when the engine asks (`pruneOnce`). Also how far back the history
// reaches, which a pass reads.
import type { HistoryReach } from '../../sops/hub-engine.ts'
import type { BatchOp } from './group-commit.ts'
import { retentionEveryMs, segmentsToDrop } from './log/retention.ts'
import { carryOps } from './run-deltas.ts'
import type { StoreContext } from './store-context.ts'
import {
  DROPPED,
  FIN,
  FIRST,
  ONCE,
  ONCE_AT,
  OPEN,
  RUN,
  SEGTIME,
  deltaKey,
  parseLocator,
} from './store-layout.ts'
import { replay } from './store-reads.ts'
import { write } from './store-writes.ts'

/** Forgets once-only marks written before `before` (epoch ms); returns how many. */
export async function pruneOnce(ctx: StoreContext, before: number): Promise<number> {
  await ctx.settle()
  const ops: { type: 'del'; key: string }[] = []
  const lt = `${ONCE_AT}${before.toString(36).padStart(10, '0')}`
  for await (const k of ctx.db.keys({ gt: ONCE_AT, lt })) {
    ops.push({ type: 'del', key: k }, { type: 'del', key: ONCE + k.slice(ONCE_AT.length + 11) })
  }
  if (ops.length > 0) await write(ctx, ops)
  return ops.length / 2
}

/** How far back the history reaches and what it takes on disk (`svc hub status`, the console). */
export function history(ctx: StoreContext): HistoryReach {
  return {
    oldestAt: ctx.oldest,
    logBytes: ctx.log.bytes() + ctx.index.bytes(),
    segments: ctx.log.segments().length,
    maxAgeMs: ctx.bounds.maxAgeMs,
    maxBytes: ctx.bounds.maxBytes,
  }
}

async function readOldest(ctx: StoreContext): Promise<void> {
  ctx.oldest = await ctx.index.oldest()
}

export function schedulePrune(ctx: StoreContext): void {
  if (ctx.opts.retention === false) {
    void prune(ctx).catch(() => undefined)
    return
  }
  const every = retentionEveryMs(ctx.bounds)
  ctx.pruneTimer = setInterval(() => void prune(ctx).catch(() => undefined), every)
  ctx.pruneTimer.unref()
  // And each time a segment fills: a burst fills one in about a second, and the size bound then
  // holds within a segment or two of max_mb, not a minute's worth of burst over it.
  // A pass under way read the segments before this one filled: a new pass follows it.
  ctx.onSealed = () =>
    void (ctx.pruning ?? Promise.resolve())
      .catch(() => undefined)
      .then(() => {
        // Not once the store is closing (`close` clears it).
        if (ctx.onSealed) void prune(ctx).catch(() => undefined)
      })
  void prune(ctx).catch(() => undefined)
}

/**
 * One pass of retention: drops the segments past the bounds (log/retention.ts). Runs beside the
 * event path: its writes go through the group committer like any other. A pass already under
 * way is waited for, not doubled.
 */
export function prune(ctx: StoreContext): Promise<void> {
  ctx.pruning ??= prunePass(ctx).finally(() => {
    ctx.pruning = null
    ctx.finishedSince.clear()
  })
  return ctx.pruning
}

async function prunePass(ctx: StoreContext): Promise<void> {
  if (ctx.opts.retention === false || ctx.exporting > 0) return readOldest(ctx)
  if (ctx.broken || ctx.reopening) return
  // A sealed segment's index file that could not be written (a full disk) is tried again.
  await ctx.index.sealBefore(ctx.log.position().seg)
  const now = ctx.now()
  // A segment's size counts its index file's: the bound is of what history takes on disk.
  const segments = ctx.log.segments().map((s) => ({ ...s, bytes: s.bytes + ctx.index.bytesOf(s.n) }))
  for (const n of segmentsToDrop(segments, ctx.log.position().seg, now, ctx.bounds))
    if (!(await dropSegment(ctx, n))) break
  await readOldest(ctx)
}

/**
 * Drops one segment. The runs whose first record is in it: a finished one leaves the index
 * with all its records; an unfinished one (running, at a gate, waiting for approval) is
 * carried forward, its records written again as one into the segment being written. LevelDB
 * is synced before the file goes, so the kept triggers and once-only marks the segment's
 * batches carried are durable without it (admission records and MQTT marks, whose values are
 * in the log, go with it). Returns false when a run finished while the pass read it: the
 * segment is left for the next pass.
 */
async function dropSegment(ctx: StoreContext, n: number): Promise<boolean> {
  await ctx.settle()
  ctx.finishedSince.clear()
  const heads = new Set<string>()
  for (const b of await ctx.log.scan(n))
    for (const { op } of b.ops)
      if (op.type === 'put' && op.key.startsWith(RUN) && op.key.endsWith(FIRST))
        heads.add(op.key.slice(RUN.length, -FIRST.length))
  let carry: BatchOp[] = []
  let carriedIds: string[] = []
  // A run finished after it was read open would be carried on as unfinished: leave the segment.
  const flushCarry = async (): Promise<boolean> => {
    if (carriedIds.some((id) => ctx.finishedSince.has(id))) return false
    if (carry.length > 0) await write(ctx, carry)
    carry = []
    carriedIds = []
    return true
  }
  const gone: string[] = []
  // Runs LevelDB holds nothing of: those the run index alone locates go with the segment's file.
  const unheld = new Set<string>()
  let removed = 0
  let carried = 0
  // Read in chunks, each run's keys at once: a segment holds thousands of runs, and retention
  // must drop them faster than a burst writes them.
  const ids = [...heads]
  for (let c = 0; c < ids.length; c += 256) {
    const chunk = ids.slice(c, c + 256)
    const [firsts, opens] = await Promise.all([
      ctx.db.getMany(chunk.map((id) => deltaKey(id, 0))),
      ctx.db.getMany(chunk.map((id) => OPEN + id)),
    ])
    await Promise.all(
      chunk.map(async (id, i) => {
        const loc = firsts[i]
        if (loc === undefined) unheld.add(id)
        if (loc === undefined || !loc.startsWith('@') || parseLocator(loc).seg !== n) return
        if (opens[i] !== undefined) {
          const r = await replay(ctx, id)
          if (r) {
            // The records replayed, no more: a record written since stays after the carried one.
            carry.push(...carryOps(r.run, r.keys))
            carriedIds.push(id)
            carried++
            return
          }
        }
        // Finished: its records, summary and marker. Its entry in the finished runs' index goes
        // with the file of the segment that holds its summary; until then, the entry names this
        // segment as its first, and a page passes it over.
        const keys: string[] = []
        for await (const k of ctx.db.keys({ gt: `${RUN}${id}!`, lt: `${RUN}${id}!\xff` })) keys.push(k)
        gone.push(...keys, FIN + id, OPEN + id)
        removed++
      }),
    )
    if (carry.length >= 2000 && !(await flushCarry())) return false
  }
  if (!(await flushCarry())) return false
  for (const id of await ctx.index.ownOf(n)) if (unheld.has(id)) removed++
  // A finished run's keys go from LevelDB alone, not through the log: the log needs no record
  // of it (`rebuildIndex` leaves out a run whose first record is gone). The batch is synced,
  // and with it every earlier LevelDB write, before the file goes.
  await ctx.db.batch(
    [
      ...gone.map((key) => ({ type: 'del' as const, key })),
      { type: 'del', key: SEGTIME + n.toString(36) },
      { type: 'put', key: DROPPED, value: String(n) },
    ],
    { sync: true },
  )
  await ctx.log.drop(n)
  await ctx.index.drop(n)
  ctx.opts.onDrop?.({ segment: n, removed, carried })
  return true
}
