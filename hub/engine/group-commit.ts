// Group commit: writers hand in their operations and await their own durability; whatever
// arrives while one `sync: true` batch is on disk goes into the next one. One fsync then covers
// many runs' state changes, and no writer is told "stored" before its batch is synced.
//
// Operations go to LevelDB in arrival order, so of two on one key the later wins (LevelDB
// applies a batch in order); they are not merged here, which cost more per operation (a map
// of every key in the batch) than the few repeated keys a batch has (`last!<sop>`) save.
/**
 * `local`: an operation on what the store can derive from its other operations (the run index,
 * the `open!` markers): applied to the index, not written to the history log, and derived again
 * from the log after a crash (store-replay.ts `derived`). `fresh`: a put of a key nothing wrote
 * before (a new run's `open!` marker), so a delete staged after it leaves LevelDB nothing to do.
 */
export type BatchOp =
  | { type: 'put'; key: string; value: string; local?: true; fresh?: true }
  | { type: 'del'; key: string; local?: true }

/**
 * How long a deferrable write may wait for a write that cannot wait: a run's final record rides
 * in the next admission's sync instead of costing one of its own, and the next event's admission
 * does not queue behind it (bench/README.md, peer: one event at a time paid two fsyncs). The
 * wait follows the writes that cannot wait: while they come at a steady pace (events a second
 * apart or closer), until a little after the next one is due, at most DEFER_MAX_MS; otherwise
 * DEFER_MS (hub/engine/README.md, "The write budget"). What a longer wait risks is a kill in it
 * running a run's last step again.
 */
export const DEFER_MS = 5
export const DEFER_MAX_MS = 2000
/**
 * How long a lazy write (`write(ops, { lazy: true })`) waits for another to carry it: what is
 * only tidied away (a once-only mark forgotten 30 s after its PUBACK) never costs a sync of its
 * own while the hub is busy, and at most one a minute while it is not.
 */
export const LAZY_MS = 60_000

/** How long a deferrable write waits, given when the last urgent writes came (ms, monotonic). */
export function deferFor(now: number, lastUrgentAt: number, gap: number): number {
  if (!Number.isFinite(gap) || gap > DEFER_MAX_MS || now - lastUrgentAt > gap * 2) return DEFER_MS
  const due = lastUrgentAt + gap - now
  return Math.min(DEFER_MAX_MS, Math.max(DEFER_MS, due + Math.max(DEFER_MS, gap / 4)))
}

export type WriteBatch = (ops: BatchOp[]) => Promise<void>

interface Pending {
  ops: BatchOp[]
  waiters: { resolve: () => void; reject: (e: unknown) => void }[]
  /** Holds a write that cannot wait, or a deferred one whose time is up: written next. */
  due: boolean
}

export class GroupCommitter {
  private pending: Pending | null = null
  private flushing: Promise<void> | null = null
  /** A batch of deferrable or lazy writes only, waiting for a write that cannot wait. */
  private deferred: NodeJS.Timeout | null = null
  /** When `deferred` fires (ms, monotonic): a write that may wait less brings it forward. */
  private deferredAt = Number.POSITIVE_INFINITY
  /** Batches written and operations in them (for the bench and the logs). */
  batches = 0
  ops = 0
  /** Milliseconds spent inside `writeBatch` (serialising and syncing). */
  busyMs = 0

  /**
   * `windowMs`: a write that cannot wait still waits this long for others to share its sync
   * (`[history] commit_window_ms`): fewer, fuller pages for the latency of the window. 0: none.
   */
  constructor(
    private readonly writeBatch: WriteBatch,
    private readonly windowMs = 0,
    private readonly lazyMs = LAZY_MS,
  ) {}

  private window: NodeJS.Timeout | null = null
  /** When the last write that cannot wait came, and the time between the last two. */
  private lastUrgentAt = Number.NEGATIVE_INFINITY
  private urgentGap = Number.POSITIVE_INFINITY

  /**
   * Resolves once `ops` are synced. `defer`: nothing the caller does next depends on it being
   * durable soon, so the batch may wait up to DEFER_MS for another write to share its sync.
   * `lazy`: nothing depends on it being durable at all before the next write (a crash before it
   * only leaves a record to tidy later): it waits for another write to carry it, up to LAZY_MS.
   */
  write(ops: BatchOp[], opts: { defer?: boolean; lazy?: boolean } = {}): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (!this.pending) this.pending = { ops: [], waiters: [], due: false }
      const pending = this.pending
      for (const op of ops) pending.ops.push(op)
      pending.waiters.push({ resolve, reject })
      const now = performance.now()
      if (!opts.defer && !opts.lazy) {
        // Writes close together (an admission and its run's first checkpoint) are one event's.
        if (now - this.lastUrgentAt >= 2 * DEFER_MS) this.urgentGap = now - this.lastUrgentAt
        this.lastUrgentAt = now
        pending.due = true
      }
      if (!pending.due) {
        // Deferred only: it waits its time, also while a batch is on disk (the loop leaves it).
        const wait = opts.lazy ? this.lazyMs : deferFor(now, this.lastUrgentAt, this.urgentGap)
        if (now + wait < this.deferredAt) {
          if (this.deferred) clearTimeout(this.deferred)
          this.deferredAt = now + wait
          this.deferred = setTimeout(() => this.due(), wait)
        }
        return
      }
      // The loop writes a due batch as soon as the one on disk is done.
      if (this.flushing) return
      if (this.windowMs > 0) {
        this.window ??= setTimeout(() => this.start(), this.windowMs)
        return
      }
      this.start()
    })
  }

  /** The deferred batch's time is up. */
  private due(): void {
    this.deferred = null
    this.deferredAt = Number.POSITIVE_INFINITY
    if (this.pending) this.pending.due = true
    this.start()
  }

  private start(): void {
    if (this.window) clearTimeout(this.window)
    this.window = null
    if (!this.flushing && this.pending?.due) this.flushing = this.loop()
  }

  /** Resolves when everything handed in so far is durable. */
  async drain(): Promise<void> {
    if (this.pending) this.pending.due = true
    this.start()
    while (this.flushing) await this.flushing
  }

  private async loop(): Promise<void> {
    // Yield once so writers in the same tick share the first batch too.
    await Promise.resolve()
    while (this.pending?.due) {
      const batch = this.pending
      this.pending = null
      // Any deferred write waiting is in this batch.
      if (this.deferred) clearTimeout(this.deferred)
      this.deferred = null
      this.deferredAt = Number.POSITIVE_INFINITY
      const t0 = performance.now()
      try {
        const ops = batch.ops
        await this.writeBatch(ops)
        this.busyMs += performance.now() - t0
        this.batches++
        this.ops += ops.length
        for (const w of batch.waiters) w.resolve()
      } catch (err) {
        for (const w of batch.waiters) w.reject(err)
      }
      // Let the writers just released run up to their next write before cutting the next
      // batch; otherwise each of them would skip a batch and advance every other fsync.
      if (batch.waiters.length > 1) await new Promise<void>((r) => setImmediate(r))
    }
    this.flushing = null
  }
}
