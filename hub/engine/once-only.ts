// Once-only admission (engine-api: `once`): an event that carries a once-only key is admitted at
// most once per SOP and key. Events with the same key wait for each other; a repeat is answered
// with the first one's decision, from its mark. The marks are written in the admission's own
// batch (admission.ts), forgotten when the source says so, and pruned after ONCE_KEEP_MS.
import type { AdmissionDecision, TriggerEvent } from '../../sops/engine-api.ts'
import type { EngineContext } from './context.ts'
import type { BatchOp } from './group-commit.ts'
import { OnceMarks, onceKey } from './once-marks.ts'
import type { OnceMark } from './store-types.ts'
import { errorText } from '../../errors/text.ts'

/** How long a once-only admission mark is kept (engine-api: `once`): a week. */
export const ONCE_KEEP_MS = 7 * 24 * 3_600_000

type Once = NonNullable<TriggerEvent['once']>

export class OnceOnly {
  /** Once-only admissions in progress, by key: a second event with the key waits for the first. */
  private readonly busy = new Map<string, Promise<void>>()
  /**
   * Fingerprinted once-only marks not yet forgotten (engine-api: `once.fingerprint`), by key, the
   * few latest each: a broker may have two events in flight under one key (Aedes numbers a
   * reconnected session's new deliveries without looking at the packet ids of those it replays).
   */
  private marks = new OnceMarks()
  private pruneTimer: NodeJS.Timeout | undefined

  constructor(private readonly ctx: EngineContext) {}

  /** Admits the event through `admitEvent` unless its key was admitted before (admission.ts `trigger`). */
  admit(
    sopName: string,
    once: Once,
    admitEvent: () => Promise<AdmissionDecision>,
  ): Promise<AdmissionDecision> {
    const ctx = this.ctx
    const key = onceKey(sopName, once.key)
    const fp = once.fingerprint
    const result = (this.busy.get(key) ?? Promise.resolve()).then(async () => {
      if (ctx.closed) throw new Error('the engine is closed')
      if (once.check) {
        if (fp !== undefined) {
          const prior = this.marks.decision(sopName, once.key, fp)
          if (prior !== undefined) return { ...prior, duplicate: true as const }
        } else {
          const prior = await ctx.store.onceDecision(key)
          if (prior) return { ...prior, duplicate: true as const }
        }
      }
      const d = await admitEvent()
      // Stored with the admission (ops); remembered once that write is through.
      if (fp !== undefined && !ctx.closed)
        this.marks.set(sopName, once.key, this.marks.with(sopName, once.key, fp, d))
      return d
    })
    const settled = result.then(
      () => {},
      () => {},
    )
    this.busy.set(key, settled)
    void settled.then(() => {
      if (this.busy.get(key) === settled) this.busy.delete(key)
    })
    return result
  }

  /** The event's once-only mark, for the admission's batch; none when the event has no key. */
  ops(sop: string, event: TriggerEvent, d: AdmissionDecision, at: number): BatchOp[] {
    const once = event.once
    if (once?.fingerprint !== undefined)
      return [
        this.ctx.store.markOp(onceKey(sop, once.key), this.marks.with(sop, once.key, once.fingerprint, d)),
      ]
    if (once) return this.ctx.store.onceOps(onceKey(sop, once.key), d, at)
    return []
  }

  forget(marks: readonly { sop: string; key: string; fingerprint: string }[]): void {
    const ctx = this.ctx
    if (ctx.closed || marks.length === 0) return
    const ops: BatchOp[] = []
    const writing: Promise<void>[] = []
    const after: (typeof marks)[number][] = []
    for (const m of marks) {
      const key = onceKey(m.sop, m.key)
      // A key being written now (its packet id came round again within FORGET_AFTER_MS) is
      // forgotten once that write is through. Dropped instead, the mark stayed, and every later
      // write of the key carried it, up to MAX_MARKS_PER_KEY of them.
      const busy = this.busy.get(key)
      if (busy) {
        writing.push(busy)
        after.push(m)
        continue
      }
      const left = this.marks.forget(m.sop, m.key, m.fingerprint)
      if (left !== null) ops.push(ctx.store.markOp(key, left))
    }
    if (after.length > 0) void Promise.all(writing).then(() => this.forget(after))
    // Lazy: a mark forgotten late is only kept a little longer, so the forgetting rides with the
    // next event's sync rather than costing the card a page a second of its own.
    if (ops.length > 0)
      ctx.store
        .write(ops, { lazy: true })
        .catch((err: unknown) => ctx.log.warn({ err: errorText(err) }, 'once-only marks not forgotten'))
  }

  /** The marks as the store holds them at a start (restart.ts). */
  load(stored: Iterable<readonly [string, readonly OnceMark[]]>): void {
    this.marks = new OnceMarks(stored)
  }

  /** Marks read back from a reopened store: those not held go before those held. */
  merge(storeKey: string, stored: readonly OnceMark[]): void {
    this.marks.merge(storeKey, stored)
  }

  startPruning(): void {
    const ctx = this.ctx
    // Once-only marks are kept ONCE_KEEP_MS. The first prune is an hour after the start, so a
    // message redelivered after a long outage still finds its mark (it comes first).
    this.pruneTimer = setInterval(() => {
      ctx.store
        .pruneOnce(ctx.now() - ONCE_KEEP_MS)
        .catch((err: unknown) => ctx.log.warn({ err: errorText(err) }, 'once-only marks not pruned'))
    }, 3_600_000)
    this.pruneTimer.unref()
  }

  stopPruning(): void {
    clearInterval(this.pruneTimer)
  }
}
