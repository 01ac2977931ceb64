// Group commit: writers hand in their operations and await their own durability; whatever
// arrives while one `sync: true` batch is on disk goes into the next one. One fsync then covers
// many runs' state changes, and no writer is told "stored" before its batch is synced.
export type BatchOp = { type: 'put'; key: string; value: string } | { type: 'del'; key: string }

export type WriteBatch = (ops: BatchOp[]) => Promise<void>

interface Pending {
  ops: BatchOp[]
  waiters: { resolve: () => void; reject: (e: unknown) => void }[]
}

export class GroupCommitter {
  private pending: Pending | null = null
  private flushing: Promise<void> | null = null
  /** Batches written and operations in them (for the bench and the logs). */
  batches = 0
  ops = 0

  constructor(private readonly writeBatch: WriteBatch) {}

  write(ops: BatchOp[]): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (!this.pending) this.pending = { ops: [], waiters: [] }
      // Later puts of a key in the same batch win: LevelDB applies a batch in order.
      for (const op of ops) this.pending.ops.push(op)
      this.pending.waiters.push({ resolve, reject })
      if (!this.flushing) this.flushing = this.loop()
    })
  }

  /** Resolves when everything handed in so far is durable. */
  async drain(): Promise<void> {
    while (this.flushing) await this.flushing
  }

  private async loop(): Promise<void> {
    // Yield once so writers in the same tick share the first batch too.
    await Promise.resolve()
    while (this.pending) {
      const batch = this.pending
      this.pending = null
      try {
        await this.writeBatch(batch.ops)
        this.batches++
        this.ops += batch.ops.length
        for (const w of batch.waiters) w.resolve()
      } catch (err) {
        for (const w of batch.waiters) w.reject(err)
      }
    }
    this.flushing = null
  }
}
