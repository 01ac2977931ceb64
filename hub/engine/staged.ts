// LevelDB's share of the engine's batches, held back and written as one unsynced batch
// (hub/engine/README.md, "The write budget"). Each LevelDB write appends to LevelDB's own log and
// dirties its partly written last page again, whatever it holds: written per event, that was a
// second page per event. So a write waits for the hub to go quiet, or for enough to fill its
// pages (`stagedDue`). The history log holds everything staged here, so a crash loses nothing:
// the store applies the log's batches past LevelDB's `meta!applied` again when it opens.
/** `fresh`: a put of a key LevelDB has never held (group-commit.ts, `BatchOp`). */
export type StagedOp =
  | { type: 'put'; key: string; value: string; fresh?: true }
  | { type: 'del'; key: string }

/** When what is staged is written (store-context.ts gives the engine's figures). */
export interface StagePolicy {
  /** Written once nothing more was staged for this long, */
  quietMs: number
  /** or this long after the first operation staged, even while more keep coming, */
  longestMs: number
  /** or quietMs after the first once this many keys wait, */
  manyKeys: number
  /** or at once when this many operations wait. */
  maxOps: number
}

/**
 * When the staged operations are due to be written (epoch ms): `ops` staged since the last write,
 * `keys` of them left to write (a key written twice once, a fresh key put and deleted not at all),
 * the first staged at `firstAt` and the latest at `lastAt`. A burst fills a write at once; a busy
 * hub writes every quietMs; a hub at one event a second writes every longestMs, when its keys
 * fill pages of LevelDB's log rather than each write dirtying the same one again; a hub gone quiet
 * writes quietMs after its last event, so an idle hub has nothing waiting for long.
 */
export function stagedDue(
  s: { ops: number; keys: number; firstAt: number; lastAt: number },
  p: StagePolicy,
): number {
  if (s.ops >= p.maxOps) return s.lastAt
  if (s.keys >= p.manyKeys) return s.firstAt + p.quietMs
  return Math.min(s.lastAt + p.quietMs, s.firstAt + p.longestMs)
}

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
  /**
   * How far into the log what is staged reaches; null: nothing staged since the last write. A
   * batch LevelDB has no share of (admission records alone, store-layout.ts `logOnly`) stages
   * this alone, so LevelDB still learns the log was applied that far.
   */
  private applied: string | null = null
  /** The keys of the batch being written, read until it is in LevelDB. */
  private writingKeys: Map<string, string | null> | null = null
  private writing: Promise<void> | null = null
  private timer: NodeJS.Timeout | null = null
  /** When the timer fires. */
  private timerAt = 0
  /** When the first and the latest operation since the last write were staged. */
  private firstAt = 0
  private lastAt = 0

  constructor(
    private readonly write: (ops: StagedOp[], applied: string) => Promise<void>,
    private readonly policy: StagePolicy,
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
    const now = Date.now()
    if (this.applied === null) this.firstAt = now
    this.lastAt = now
    this.count += ops.length
    this.applied = applied
    this.schedule(now)
  }

  private due(): number {
    const s = { ops: this.count, keys: this.keys.size, firstAt: this.firstAt, lastAt: this.lastAt }
    return stagedDue(s, this.policy)
  }

  /** Sets the timer for when the staged operations are due. */
  private schedule(now: number): void {
    const due = this.due()
    // A timer set later than due is moved earlier; one set earlier (more was staged since)
    // fires, finds the write not yet due and is set again.
    if (this.timer && this.timerAt <= due) return
    if (this.timer) clearTimeout(this.timer)
    this.timerAt = due
    this.timer = setTimeout(
      () => {
        this.timer = null
        if (this.applied === null) return
        const at = Date.now()
        if (this.due() > at) this.schedule(at)
        else this.flush().catch(this.onError)
      },
      Math.max(0, due - now),
    )
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
    return this.applied !== null || this.writing !== null
  }

  /** Writes everything staged so far to LevelDB; resolves once it is there. */
  async flush(): Promise<void> {
    while (this.writing) await this.writing.catch(() => undefined)
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
    if (this.applied === null) return
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
