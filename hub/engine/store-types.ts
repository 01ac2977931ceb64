// The types the store's parts share with each other and with its callers: what a caller may set
// (StoreOptions), a once-only mark as stored, and what was last written of a live run. A file of
// its own so the parts can name them without importing the facade that composes them.
import type { AdmissionDecision } from '../../sops/engine-api.ts'
import type { StepRecord } from '../../sops/run/record.ts'
import type { HistoryBounds } from './log/retention.ts'

export interface OnceMark {
  fp: string
  d: AdmissionDecision
}

export interface StoreOptions {
  onWriteError?: (err: unknown) => void
  /** How much finished history to keep; default 30 days and 1 GiB in 4 MiB segments. */
  history?: HistoryBounds
  /**
   * false: this process only reads the records (`svc sop runs` with no hub running): no segment
   * is dropped, by a timer or by `prune`, which then only reads how far back the history reaches.
   */
  retention?: boolean
  /** How long a write waits for others to share its sync (group-commit.ts); 0: not at all. */
  commitWindowMs?: number
  /** The clock retention judges age by (the engine's). */
  now?: () => number
  /** Told of the progress of a rebuild of the index: segments read of how many. */
  onRebuild?: (done: number, of: number) => void
  /** Told of the progress of a move into the log (a store from before it): runs moved of how many. */
  onMigrate?: (done: number, of: number) => void
  /**
   * Told that LevelDB said it had applied more of the log than the log holds (`applied` past
   * `end`): a disk that reported a sync it had not made. The index is then built again from
   * what the log holds.
   */
  onAheadOfLog?: (applied: string, end: string) => void
  /** Told of each segment retention dropped: finished runs removed, unfinished ones carried on. */
  onDrop?: (d: { segment: number; removed: number; carried: number }) => void
  /** How often index file bodies kept for pages are looked at (finished-index.ts `CACHE_SWEEP_MS`). */
  indexCacheSweepMs?: number
  /** How long LevelDB's share of the batches waits for the store to go quiet (store-context.ts `STAGE_MS`). */
  stageMs?: number
}

/** What was last written for a live run, so a state change writes only what changed. */
export interface Written {
  seq: number
  /** Each step record as last written: the object and its JSON. */
  steps: Map<number, { rec: StepRecord; json: string; settled: boolean }>
  logSeq: number
  /** The segment of the history log holding the run's first record, once it is written. */
  firstSeg?: number
}
