// Group commit: writers hand in their operations and await their own durability; whatever
// arrives while one `sync: true` batch is on disk goes into the next one. One fsync then covers
// many runs' state changes, and no writer is told "stored" before its batch is synced.
//
// A put's value may be a function, serialised when its batch is cut: several state changes of
// one run waiting for the same batch then cost one serialisation and one put (the latest state,
// which is a state the run really reached; in JS nothing runs between the cut and the write).
export type BatchOp =
  | { type: 'put'; key: string; value: string | (() => string) }
  | { type: 'del'; key: string }

/**
 * How long a deferrable write may wait for a write that cannot wait: a run's final record rides
 * in the next admission's sync instead of costing one of its own, and the next event's admission
 * does not queue behind it (bench/README.md, peer: one event at a time paid two fsyncs).
 */
export const DEFER_MS = 5

export type WriteBatch = (
  ops: ({ type: 'put'; key: string; value: string } | { type: 'del'; key: string })[],
) => Promise<void>

interface Pending {
  ops: Map<string, BatchOp>
  waiters: { resolve: () => void; reject: (e: unknown) => void }[]
}

export class GroupCommitter {
  private pending: Pending | null = null
  private flushing: Promise<void> | null = null
  /** A batch of deferrable writes only, waiting DEFER_MS for a write that cannot wait. */
  private deferred: NodeJS.Timeout | null = null
  /** Batches written and operations in them (for the bench and the logs). */
  batches = 0
  ops = 0
  /** Milliseconds spent inside `writeBatch` (serialising and syncing). */
  busyMs = 0

  constructor(private readonly writeBatch: WriteBatch) {}

  /**
   * Resolves once `ops` are synced. `defer`: nothing the caller does next depends on it being
   * durable soon, so the batch may wait up to DEFER_MS for another write to share its sync.
   */
  write(ops: BatchOp[], opts: { defer?: boolean } = {}): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (!this.pending) this.pending = { ops: new Map(), waiters: [] }
      for (const op of ops) {
        // The last operation on a key wins, in arrival order (LevelDB would apply them in order anyway).
        this.pending.ops.delete(op.key)
        this.pending.ops.set(op.key, op)
      }
      this.pending.waiters.push({ resolve, reject })
      if (this.flushing) return
      if (opts.defer) {
        this.deferred ??= setTimeout(() => this.start(), DEFER_MS)
        return
      }
      this.start()
    })
  }

  private start(): void {
    if (this.deferred) clearTimeout(this.deferred)
    this.deferred = null
    if (!this.flushing) this.flushing = this.loop()
  }

  /** Resolves when everything handed in so far is durable. */
  async drain(): Promise<void> {
    if (this.deferred) this.start()
    while (this.flushing) await this.flushing
  }

  private async loop(): Promise<void> {
    // Yield once so writers in the same tick share the first batch too.
    await Promise.resolve()
    while (this.pending) {
      const batch = this.pending
      this.pending = null
      const t0 = performance.now()
      try {
        const ops = [...batch.ops.values()].map((op) =>
          op.type === 'put' && typeof op.value === 'function'
            ? { type: 'put' as const, key: op.key, value: op.value() }
            : (op as { type: 'put'; key: string; value: string } | { type: 'del'; key: string }),
        )
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
