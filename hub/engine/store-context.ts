// What the engine store's parts share (store.ts composes them, as engine.ts does its own): the
// database and the history log, which a reopen replaces (so parts read them here each time and
// never keep them), the flags the parts read of each other (a write that broke the store, a
// reopen or a retention pass under way), LevelDB's staged share of the logged batches, and the
// three things every part does: wait for what is staged (`settle`), write it (`writeIndex`) and
// read a value LevelDB holds as a locator (`valueOf`).
import { join } from 'node:path'
import type { Level } from 'level'
import { isStoreIoError } from '../disk/errors.ts'
import { FinishedIndex } from './finished-index.ts'
import { type BatchOp, GroupCommitter, type WriteBatch } from './group-commit.ts'
import { decodeFrame, unseal } from './log/frames.ts'
import type { HistoryBounds } from './log/retention.ts'
import type { Locator, SegmentLog } from './log/segment-log.ts'
import { type StagedOp, StagedWrites } from './staged.ts'
import type { StoreOptions, Written } from './store-types.ts'
import { APPLIED, SEGTIME, parseLocator } from './store-layout.ts'

/**
 * When LevelDB's share of the batches is written (staged.ts `stagedDue`): STAGE_MS after the
 * last batch, at most ten times that after the first while batches keep coming, STAGE_MS after
 * the first once STAGE_MANY_KEYS wait, and at once when STAGE_MAX_OPS operations do. A crash
 * costs a replay of that much log at the next open. Each write dirties LevelDB's log's last page
 * again whatever it holds, so at a site's pace how often, not how much, sets its cost
 * (bench/README.md, "endurance: LevelDB written when quiet").
 */
export const STAGE_MS = 30_000
const STAGE_MANY_KEYS = 1024
const STAGE_MAX_OPS = 8192

/** When each full segment was last written, as LevelDB holds it: the log opens with them. */
export async function segmentTimes(db: Level<string, string>): Promise<Map<number, number>> {
  const out = new Map<number, number>()
  for await (const [k, v] of db.iterator({ gt: SEGTIME, lt: `${SEGTIME}\xff` }))
    out.set(Number.parseInt(k.slice(SEGTIME.length), 36), Number(v))
  return out
}

export class StoreContext {
  /** No index or layout marker yet, and no runs: the next write carries the markers. */
  unmarked = false
  /** Runs whose finish was handed in since retention last looked (`dropSegment`). */
  readonly finishedSince = new Set<string>()
  pruning: Promise<void> | null = null
  pruneTimer: NodeJS.Timeout | null = null
  /** Told when a segment is full (retention looks then too, store-retention.ts `schedulePrune`). */
  onSealed: (() => void) | null = null
  /** When a batch was last synced, for the watchdog's heartbeat (epoch ms). */
  lastSyncAt = 0
  readonly written = new Map<string, Written>()
  /** Every write goes through it (group-commit.ts); its batches are written by store-writes.ts. */
  readonly committer: GroupCommitter
  /** While the database is being opened again (`reopen`): writes and reads wait for it. */
  reopening: Promise<void> | null = null
  /** The batch being written, which a reopen waits out. */
  writing: Promise<void> | null = null
  /**
   * Set by a write that failed with an I/O error, or a reopen that could not open the database:
   * every write fails with it until the store is opened again. LevelDB itself may take writes
   * after one failed, into a log whose torn record makes it drop them at the next open: they
   * would be acknowledged and lost (measured: hub/README.md, "A full disk").
   */
  broken: Error | null = null
  readonly staged: StagedWrites
  /** A full segment's last write time, to ride in the log with the next batch (`writeBatch`). */
  segTimeDue: BatchOp | null = null
  /** Backups reading the store (`exportRecords`): retention waits for them. */
  exporting = 0
  /** The creation time of the oldest finished run in the index, read when retention last looked. */
  oldest: number | null = null
  /** The finished runs' index: a file per sealed segment, the one being written in memory. */
  readonly index: FinishedIndex

  constructor(
    public db: Level<string, string>,
    public log: SegmentLog,
    readonly path: string,
    readonly opts: StoreOptions,
    readonly bounds: HistoryBounds,
    writeBatch: WriteBatch,
  ) {
    this.committer = new GroupCommitter(writeBatch, opts.commitWindowMs ?? 0)
    this.index = new FinishedIndex(
      join(path, 'history'),
      () => ({ log: this.log, db: this.db }),
      opts.indexCacheSweepMs,
    )
    const quietMs = opts.stageMs ?? STAGE_MS
    this.staged = new StagedWrites(
      (ops, applied) => this.writeIndex(ops, applied),
      { quietMs, longestMs: 10 * quietMs, manyKeys: STAGE_MANY_KEYS, maxOps: STAGE_MAX_OPS },
      () => undefined,
    )
  }

  get onWriteError() {
    return this.opts.onWriteError
  }

  now(): number {
    return this.opts.now?.() ?? Date.now()
  }

  /**
   * LevelDB's share of logged batches, in one unsynced batch (the log has it all), with how far
   * into the log it reaches (`applied`; null: left as it is). Built as a chained batch: the array
   * form of `batch()` costs about 5 µs of main-thread time per operation in
   * abstract-level/classic-level, the chained form under 1 µs.
   */
  async writeIndex(ops: readonly StagedOp[], applied: string | null): Promise<void> {
    const batch = this.db.batch()
    try {
      for (const op of ops) {
        if (op.type === 'del') batch.del(op.key)
        else batch.put(op.key, op.value)
      }
      if (applied !== null) batch.put(APPLIED, applied)
    } catch (err) {
      await batch.close()
      throw err
    }
    try {
      await batch.write()
    } catch (err) {
      // The log has it: the store applies it again once it is opened again (`reopen`).
      if (isStoreIoError(err)) {
        this.broken ??= err as Error
        this.onWriteError?.(err)
      }
      throw err
    }
  }

  /** What reads need first: everything logged is in LevelDB. */
  async settle(): Promise<void> {
    if (this.staged.pending) await this.staged.flush()
  }

  /**
   * A value as LevelDB holds it: a locator is read from the log (undefined when its segment is
   * gone); anything else is the value itself (a store not yet migrated).
   */
  async valueOf(v: string | undefined): Promise<string | undefined> {
    if (v === undefined || !v.startsWith('@')) return v
    const loc = parseLocator(v)
    let frame: Buffer | null
    if (!loc.inner) frame = await this.log.read(loc)
    else {
      const block = await this.block(loc)
      frame = block ? block.subarray(loc.inner.off, loc.inner.off + loc.inner.len) : null
    }
    if (frame === null) return undefined
    const op = decodeFrame(frame)
    return op.type === 'put' ? op.value : undefined
  }

  /** Deflated batches read lately: a run's records are mostly in one or two. */
  private blocks = new Map<string, Promise<Buffer | null>>()

  /** A batch's records, inflated once however many reads ask for it at the same time. */
  private block(loc: Locator): Promise<Buffer | null> {
    const key = `${loc.seg}.${loc.off}`
    const hit = this.blocks.get(key)
    if (hit) return hit
    const block = this.log.read(loc).then((frame) => (frame === null ? null : unseal(frame)))
    if (this.blocks.size >= 16) this.blocks.delete(this.blocks.keys().next().value!)
    this.blocks.set(key, block)
    // A failed or missing read is not kept: the next asks again.
    block.then(
      (b) => b === null && this.blocks.delete(key),
      () => this.blocks.delete(key),
    )
    return block
  }

  async closeFiles(): Promise<void> {
    await this.index.close()
    await this.db.close().catch(() => undefined)
    await this.log.close()
  }
}
