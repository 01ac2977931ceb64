// The engine store's write path (hub/engine/README.md, "The history log" and "The write
// budget"): a batch from the group committer (group-commit.ts) is deflated, appended to the
// history log and synced there once, and LevelDB's share of it is staged (staged.ts) to be
// written later without a sync. A write that fails with an I/O error breaks the store until it
// is opened again (`reopen`), which is here too because it is what a failed write waits for.
import { join } from 'node:path'
import { Level } from 'level'
import { isStoreIoError } from '../disk/errors.ts'
import { ENGINE_LEVELDB_SIZES } from '../leveldb.ts'
import type { RunSummary } from '../../sops/hub-engine.ts'
import { entryOf } from './finished-index.ts'
import type { IndexEntry } from './log/index-file.ts'
import type { BatchOp } from './group-commit.ts'
import { encodeBatch, sealBatch } from './log/frames.ts'
import { SegmentLog } from './log/segment-log.ts'
import { INDEX_MARKER, INDEX_VERSION, idPosition, position } from './run-index.ts'
import { type StoreContext, segmentTimes } from './store-context.ts'
import {
  FIN,
  FIRST,
  LAYOUT,
  LAYOUT_VERSION,
  RUN,
  SEGTIME,
  deltaKey,
  indexOp,
  locatorText,
  logOnly,
  parseLocator,
} from './store-layout.ts'
import { catchUp } from './store-replay.ts'
import { summaryOf } from './run-deltas.ts'
import { errorText } from '../../errors/text.ts'

/** One batch: appended to the log and synced there, then applied to LevelDB. */
export async function writeSynced(ctx: StoreContext, ops: BatchOp[]): Promise<void> {
  if (ctx.reopening) await ctx.reopening
  if (ctx.broken) {
    // The disk guard reopens the store once there is room; without one, the next write does.
    if (ctx.onWriteError) throw ctx.broken
    await reopen(ctx)
  }
  const written = writeBatch(ctx, ops)
  ctx.writing = written
  try {
    await written
  } catch (err) {
    // LevelDB keeps a failed write's error for every later write until it is opened again:
    // the disk guard (hub/disk/) hears of it once and reopens the store when there is room.
    if (isStoreIoError(err)) {
      ctx.broken = err as Error
      ctx.onWriteError?.(err)
    }
    throw err
  } finally {
    if (ctx.writing === written) ctx.writing = null
  }
}

async function writeBatch(ctx: StoreContext, batch: BatchOp[]): Promise<void> {
  // A full segment's last write time rides in the log with the next batch, so that a crash
  // before LevelDB has it does not leave retention judging the segment by its file's time.
  const ops = ctx.segTimeDue ? [...batch, ctx.segTimeDue] : batch
  ctx.segTimeDue = null
  const enc = encodeBatch(ops)
  const sealed = await sealBatch(enc.bytes)
  const at = await ctx.log.append(sealed, ctx.now())
  ctx.lastSyncAt = Date.now()
  const staged = ops.flatMap((op, i) =>
    logOnly(op.key) ? [] : [indexOp(op, () => locatorText(at.seg, at.off, sealed.length, enc.frames[i]!))],
  )
  if (at.full) {
    const key = SEGTIME + at.full.n.toString(36)
    const value = String(at.full.lastWriteAt)
    staged.push({ type: 'put', key, value })
    ctx.segTimeDue = { type: 'put', key, value }
  }
  // The heartbeat's empty batch leaves LevelDB alone: a restart reads its commit frame again.
  if (ops.length > 0) ctx.staged.add(staged, `${at.seg}:${at.off + sealed.length}`)
  noteIndexed(ctx, ops, at.seg)
  // The full segment's index is written beside it, off this write's path.
  if (at.full) {
    void ctx.index.sealBefore(at.seg)
    ctx.onSealed?.()
  }
}

/**
 * What a logged batch tells the finished runs' index (finished-index.ts): where a run's first
 * record now is (written, or carried on by retention), and each finished run's summary.
 */
function noteIndexed(ctx: StoreContext, ops: readonly BatchOp[], seg: number): void {
  for (const op of ops) {
    if (op.type !== 'put') continue
    if (op.key.startsWith(FIN)) {
      const s = summaryOf(op) ?? (JSON.parse(op.value) as RunSummary)
      ctx.index.add(seg, indexOwn(ctx, s, seg) ?? entryOf(s, ctx.written.get(s.id)?.firstSeg ?? seg))
    } else if (op.key.startsWith(RUN) && op.key.endsWith(FIRST)) {
      const w = ctx.written.get(op.key.slice(RUN.length, -FIRST.length))
      if (w) w.firstSeg = seg
    }
  }
}

/**
 * A run admitted and finished since LevelDB's last write, whose first record and summary are in
 * the same segment: its records' locators go in its index entry instead, and are taken back
 * from what is staged, so LevelDB never holds them (hub/engine/README.md, "The write budget").
 * The segment's scan finds them again after a crash (finished-index.ts `entriesOfSegment`), and
 * retention drops them with the segment's file. Null for any other run, which LevelDB locates:
 * one whose first record LevelDB was already given, or whose id does not give its position
 * (`idPosition`: the index finds the run by it).
 */
function indexOwn(ctx: StoreContext, s: RunSummary, seg: number): IndexEntry | null {
  if (!ctx.index.opened || !ctx.staged.isFresh(deltaKey(s.id, 0))) return null
  if (idPosition(s.id) !== position(s)) return null
  const keys: string[] = []
  const recs: string[] = []
  for (let i = 0; ; i++) {
    const at = ctx.staged.get(deltaKey(s.id, i))
    if (typeof at !== 'string') break
    keys.push(deltaKey(s.id, i))
    recs.push(at)
  }
  const summaryAt = ctx.staged.get(FIN + s.id)
  if (typeof summaryAt !== 'string' || parseLocator(recs[0]!).seg !== seg) return null
  ctx.staged.withdraw([...keys, FIN + s.id])
  return entryOf(s, seg, [...recs, summaryAt])
}

/**
 * The watchdog's heartbeat (hub/service/store-probe.ts): resolves once the store has synced a
 * batch within `freshMs`, riding with the next batch when one is being written, and writes an
 * empty batch (a commit frame) only when the hub has been idle that long. It fails while
 * writes fail. An idle hub so costs the card one page per `freshMs`, not one per check.
 */
export async function heartbeat(ctx: StoreContext, freshMs = 300_000): Promise<void> {
  if (ctx.broken) throw ctx.broken
  if (Date.now() - ctx.lastSyncAt < freshMs) return
  await write(ctx, [])
}

/** One synced write, shared with concurrent writers (group-commit.ts, also for `defer`). */
export async function write(
  ctx: StoreContext,
  ops: BatchOp[],
  opts: { defer?: boolean; lazy?: boolean } = {},
): Promise<void> {
  if (!ctx.unmarked) return ctx.committer.write(ops, opts)
  await ctx.committer.write(
    [
      ...ops,
      { type: 'put', key: INDEX_MARKER, value: INDEX_VERSION },
      { type: 'put', key: LAYOUT, value: LAYOUT_VERSION },
    ],
    opts,
  )
  ctx.unmarked = false
}

/**
 * Closes the database and opens it again: LevelDB refuses every write after one failed (a full
 * disk) until then. Writes and the run reads wait meanwhile; a write under way is waited out.
 * When it cannot be opened, writes fail with an I/O error (the engine's checkpoints wait and
 * retry) until a later reopen succeeds.
 */
export async function reopen(ctx: StoreContext): Promise<void> {
  let done = (): void => undefined
  ctx.reopening = new Promise<void>((resolve) => (done = resolve))
  try {
    while (ctx.writing) await ctx.writing.catch(() => undefined)
    // What was staged is in the log: applied again from it below (`catchUp`).
    await ctx.staged.discard()
    await ctx.closeFiles()
    const db = new Level<string, string>(ctx.path, { valueEncoding: 'utf8', ...ENGINE_LEVELDB_SIZES })
    try {
      await db.open()
      ctx.db = db
      ctx.log = await SegmentLog.open(
        join(ctx.path, 'history'),
        ctx.bounds.segmentBytes,
        await segmentTimes(db),
      )
      await catchUp(ctx)
    } catch (err) {
      ctx.broken = Object.assign(new Error(`the engine store did not open again: ${errorText(err)}`), {
        code: 'LEVEL_IO_ERROR',
      })
      throw err
    }
    ctx.broken = null
  } finally {
    ctx.reopening = null
    done()
  }
}
