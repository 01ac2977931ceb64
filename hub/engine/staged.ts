// LevelDB's share of the engine's batches, held back and written as one unsynced batch every half
// minute (STAGE_MS), or sooner when many wait (hub/engine/README.md, "The write budget"). Each LevelDB
// write appends to LevelDB's own log, and on ext4 the history log's fdatasync writes that page
// out with its own: written per event, LevelDB cost the card a second page per event. The
// history log holds everything staged here, so a crash loses nothing: the store applies the
// log's batches past LevelDB's `meta!applied` again when it opens.
/** `fresh`: a put of a key LevelDB has never held (group-commit.ts, `BatchOp`). */
export type StagedOp =
  | { type: 'put'; key: string; value: string; fresh?: true }
  | { type: 'del'; key: string }

export class StagedWrites {
  /** Operations staged since the last write (a key written twice counts twice). */
  private count = 0
  /**
   * The latest staged value of each key (null: deleted): what is written, so a key put and
   * deleted again before the write (a run's `open!` marker) costs LevelDB nothing.
   */
  private keys = new Map<string, string | null>()
  /**
   * The keys put fresh since the last write: deleted before it, they are dropped, not written as
   * a delete. A delete LevelDB is given stays as a tombstone through every compaction down to its
   * last level; a run's `open!` marker, put at admission and deleted at the finish a moment later,
   * cost one per run.
   */
  private fresh = new Set<string>()
  private applied: string | null = null
  /** The keys of the batch being written, read until it is in LevelDB. */
  private writingKeys: Map<string, string | null> | null = null
  private writing: Promise<void> | null = null
  private timer: NodeJS.Timeout | null = null

  constructor(
    private readonly write: (ops: StagedOp[], applied: string) => Promise<void>,
    private readonly everyMs: number,
    private readonly maxOps: number,
    private readonly onError: (err: unknown) => void,
  ) {}

  /** Stages one logged batch's LevelDB operations; `applied`: how far into the log they reach. */
  add(ops: readonly StagedOp[], applied: string): void {
    for (const op of ops) {
      if (op.type === 'put') {
        this.keys.set(op.key, op.value)
        if (op.fresh) this.fresh.add(op.key)
      } else if (this.fresh.delete(op.key)) this.keys.delete(op.key)
      else this.keys.set(op.key, null)
    }
    this.count += ops.length
    this.applied = applied
    if (this.count >= this.maxOps) this.later(0)
    else this.later(this.everyMs)
  }

  private later(ms: number): void {
    if (this.timer && ms > 0) return
    if (this.timer) clearTimeout(this.timer)
    this.timer = setTimeout(() => {
      this.timer = null
      this.flush().catch(this.onError)
    }, ms)
  }

  /** A staged key's value: a string, null when staged deleted, undefined when not staged. */
  get(key: string): string | null | undefined {
    const v = this.keys.get(key)
    if (v !== undefined) return v
    return this.writingKeys?.get(key)
  }

  /** Whether `key` was put fresh since the last write: LevelDB has never held it. */
  isFresh(key: string): boolean {
    return this.fresh.has(key)
  }

  /**
   * Takes back staged puts of keys LevelDB has never held, so it never does: a finished run's
   * records, which the run index locates itself (store-writes.ts `indexOwn`). The caller knows
   * they are new (the run's first record was staged fresh since the last write).
   */
  withdraw(keys: readonly string[]): void {
    for (const key of keys) {
      this.keys.delete(key)
      this.fresh.delete(key)
    }
  }

  get pending(): boolean {
    return this.count > 0 || this.writing !== null
  }

  /** Writes everything staged so far to LevelDB; resolves once it is there. */
  async flush(): Promise<void> {
    while (this.writing) await this.writing.catch(() => undefined)
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
    if (this.count === 0) return
    const ops: StagedOp[] = []
    for (const [key, value] of this.keys)
      ops.push(value === null ? { type: 'del', key } : { type: 'put', key, value })
    const applied = this.applied!
    this.writingKeys = this.keys
    this.count = 0
    this.keys = new Map()
    this.fresh.clear()
    this.applied = null
    this.writing = this.write(ops, applied).finally(() => {
      this.writing = null
      this.writingKeys = null
    })
    await this.writing
  }

  /** Forgets what is staged (the store is opened again and applies the log itself). */
  async discard(): Promise<void> {
    while (this.writing) await this.writing.catch(() => undefined)
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
    this.count = 0
    this.keys.clear()
    this.fresh.clear()
    this.applied = null
  }
}
