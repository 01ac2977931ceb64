// The engine's durable state (hub/engine/README.md, "The history log"): every batch of state
// changes, shared with concurrent writers (group-commit.ts), is appended to the history log
// (log/) and synced there, once. LevelDB beside it holds what is looked up: kept triggers,
// admission records, once-only marks, the run index (run-index.ts), and for each run record and
// finished-run summary not its bytes but where they are in the log. LevelDB is written without
// a sync and says how far into the log it has applied; on open the log's batches past that are
// applied again, so after a crash it never disagrees with the log.
//
// The class composes its parts, as engine.ts does the engine's:
//   store-context.ts    what the parts share: LevelDB, the log, the staged writes, the flags
//   store-types.ts      the options, a once-only mark, what was last written of a run
//   store-layout.ts     the keys, and which values live in the log as locators
//   run-deltas.ts       a run as the deltas it is written as, and read back from
//   store-writes.ts     a batch into the log and LevelDB's share staged; the reopen after a failure
//   store-open.ts       what an open checks: the log caught up, a store from before the log moved
//   store-replay.ts     the log applied to LevelDB again: on open, and a rebuild of the index
//   store-reads.ts      runs, pages of the index, kept triggers, admission records, once-only marks
//   store-retention.ts  segments dropped past the bounds, unfinished runs carried on
//   store-export.ts     the records a backup keeps
import type { HistoryReach, RunFilter, RunPage, RunSummary } from '../../sops/hub-engine.ts'
import type { AdmissionDecision, AdmissionRecord, KeptTrigger } from '../../sops/engine-api.ts'
import type { RunRecord } from '../../sops/run/record.ts'
import type { BatchOp, GroupCommitter } from './group-commit.ts'
import type { HistoryBounds } from './log/retention.ts'
import type { SegmentLog } from './log/segment-log.ts'
import type { Level } from 'level'
import type { OnceMark, StoreOptions, Written } from './store-types.ts'
import * as deltas from './run-deltas.ts'
import { StoreContext } from './store-context.ts'
import { exportRecords } from './store-export.ts'
import { ADM, KEPT, LAST, MARK, ONCE, ONCE_AT, seqKey } from './store-layout.ts'
import { checkLayout, openFiles } from './store-open.ts'
import * as reads from './store-reads.ts'
import { rebuildIndex } from './store-replay.ts'
import * as retention from './store-retention.ts'
import { heartbeat, reopen, write, writeSynced } from './store-writes.ts'

export const DEFAULT_BOUNDS: HistoryBounds = {
  maxAgeMs: 30 * 86_400_000,
  maxBytes: 1024 * 1024 * 1024,
  // The run index holds the segment being written in memory, about 25,000 runs at 4 MiB in
  // bursts (hub/engine/README.md, "The run index"): at 8 MiB, 50,000 were too many for a
  // 96 MB heap (bench/README.md, "endurance: finished runs located by the run index").
  segmentBytes: 4 * 1024 * 1024,
}

export class EngineStore {
  private seq = 0
  private readonly ctx: StoreContext
  readonly committer: GroupCommitter
  /** What was last written of each live run (run-deltas.ts), the context's. */
  private readonly written: Map<string, Written>
  /**
   * The context's, here as well because test/engine/history-log.test.ts ("finished runs leave
   * nothing behind") reads it, and `written`, off the store.
   */
  private readonly finishedSince: Set<string>

  private constructor(db: Level<string, string>, log: SegmentLog, path: string, opts: StoreOptions) {
    const ctx: StoreContext = new StoreContext(db, log, path, opts, opts.history ?? DEFAULT_BOUNDS, (ops) =>
      writeSynced(ctx, ops),
    )
    this.ctx = ctx
    this.committer = ctx.committer
    this.written = ctx.written
    this.finishedSince = ctx.finishedSince
  }

  static async open(path: string, opts: StoreOptions = {}): Promise<EngineStore> {
    const { db, log } = await openFiles(path, opts.history ?? DEFAULT_BOUNDS)
    const store = new EngineStore(db, log, path, opts)
    try {
      await checkLayout(store.ctx)
    } catch (err) {
      await store.ctx.closeFiles()
      throw err
    }
    retention.schedulePrune(store.ctx)
    return store
  }

  // ---- writes -----------------------------------------------------------------------------

  /** One synced write, shared with concurrent writers (group-commit.ts, also for `defer` and `lazy`). */
  write(ops: BatchOp[], opts: { defer?: boolean; lazy?: boolean } = {}): Promise<void> {
    return write(this.ctx, ops, opts)
  }

  heartbeat(freshMs?: number): Promise<void> {
    return heartbeat(this.ctx, freshMs)
  }

  reopen(): Promise<void> {
    return reopen(this.ctx)
  }

  runOps(run: RunRecord): BatchOp[] {
    return deltas.runOps(this.ctx, run)
  }

  finishOps(run: RunRecord, summary: RunSummary): BatchOp[] {
    return deltas.finishOps(this.ctx, run, summary)
  }

  /** A finished run is no longer written; drop what was remembered about it. */
  forget(runId: string): void {
    this.written.delete(runId)
  }

  keptOp(kept: KeptTrigger): BatchOp {
    return { type: 'put', key: kept.key, value: JSON.stringify(kept) }
  }

  unkeepOp(key: string): BatchOp {
    return { type: 'del', key }
  }

  newKeptKey(at: number): string {
    return seqKey(KEPT, at, this.seq++)
  }

  admissionOp(rec: AdmissionRecord): BatchOp {
    return { type: 'put', key: seqKey(ADM, rec.at, this.seq++), value: JSON.stringify(rec) }
  }

  /** Marks `key` admitted with decision `d`; written in the admission's own batch. */
  onceOps(key: string, d: AdmissionDecision, at: number): BatchOp[] {
    return [
      { type: 'put', key: ONCE + key, value: JSON.stringify(d) },
      { type: 'put', key: `${ONCE_AT}${at.toString(36).padStart(10, '0')}!${key}`, value: '' },
    ]
  }

  /** The marks under `key`, newest last; none: the key is deleted. */
  markOp(key: string, marks: readonly OnceMark[]): BatchOp {
    if (marks.length === 0) return { type: 'del', key: MARK + key }
    return { type: 'put', key: MARK + key, value: JSON.stringify(marks) }
  }

  lastFinishedOp(sop: string, at: number): BatchOp {
    return { type: 'put', key: LAST + sop, value: String(at) }
  }

  // ---- reads ------------------------------------------------------------------------------

  getRun(id: string): Promise<RunRecord | undefined> {
    return reads.getRun(this.ctx, id)
  }

  queryRuns(filter: RunFilter, live?: readonly RunSummary[]): Promise<RunPage> {
    return reads.queryRuns(this.ctx, filter, live)
  }

  openSummaries(): Promise<RunSummary[]> {
    return reads.openSummaries(this.ctx)
  }

  finished(): AsyncGenerator<unknown> {
    return reads.finished(this.ctx)
  }

  unfinished(known?: ReadonlySet<string>): Promise<RunRecord[]> {
    return reads.unfinished(this.ctx, known)
  }

  kept(): Promise<KeptTrigger[]> {
    return reads.kept(this.ctx)
  }

  admissions(limit?: number): Promise<AdmissionRecord[]> {
    return reads.admissions(this.ctx, limit)
  }

  lastFinished(): Promise<Map<string, number>> {
    return reads.lastFinished(this.ctx)
  }

  marks(): Promise<Map<string, OnceMark[]>> {
    return reads.marks(this.ctx)
  }

  onceDecision(key: string): Promise<AdmissionDecision | undefined> {
    return reads.onceDecision(this.ctx, key)
  }

  exportRecords(opts: { history: boolean }): AsyncGenerator<[string, string]> {
    return exportRecords(this.ctx, opts)
  }

  // ---- retention and the index ------------------------------------------------------------

  history(): HistoryReach {
    return retention.history(this.ctx)
  }

  prune(): Promise<void> {
    return retention.prune(this.ctx)
  }

  pruneOnce(before: number): Promise<number> {
    return retention.pruneOnce(this.ctx, before)
  }

  rebuildIndex(lostTo?: string): Promise<void> {
    return rebuildIndex(this.ctx, lostTo)
  }

  async close(): Promise<void> {
    const ctx = this.ctx
    if (ctx.pruneTimer) clearInterval(ctx.pruneTimer)
    ctx.onSealed = null
    while (ctx.pruning) await ctx.pruning.catch(() => undefined)
    await ctx.committer.drain()
    await ctx.settle().catch(() => undefined)
    await ctx.closeFiles()
  }
}
