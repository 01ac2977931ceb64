// Admission and the kept-trigger queue: what happens to a trigger event (started, kept, folded
// into the run in flight, dropped) as sops/run/admission.ts decides it, written with its
// admission record; and the release of kept triggers once a slot frees, a run finishes or a
// cooldown ends.
import type { AdmissionDecision, AdmissionRecord, KeptTrigger, TriggerEvent } from '../../sops/engine-api.ts'
import { errorText } from '../../errors/text.ts'
import { type AdmissionVerdict, admit, cooldownLeft, mayRelease } from '../../sops/run/admission.ts'
import { MAX_COALESCED_KEPT } from '../../sops/run/record.ts'
import { holdsSlot } from '../../sops/run/states.ts'
import { badEvent } from '../../sops/run/trigger-event.ts'
import { DiskRefusal } from '../disk/errors.ts'
import { durable } from './checkpoints.ts'
import type { EngineContext } from './context.ts'
import type { BatchOp } from './group-commit.ts'
import type { OnceOnly } from './once-only.ts'
import type { RunDriver } from './run-driver.ts'

export class Admission {
  private readonly timers = new Map<string, NodeJS.Timeout>()
  /** SOPs whose kept triggers wait for the disk to have room before they are released. */
  private readonly releaseLater = new Set<string>()
  /** Kept triggers released whose removal from the store is not written yet. */
  readonly unkeeping = new Set<string>()

  constructor(
    private readonly ctx: EngineContext,
    private readonly driver: RunDriver,
    private readonly once: OnceOnly,
  ) {}

  /**
   * A once-only event (engine-api: `once`) is admitted at most once per SOP and key: events with
   * the same key wait for each other, and a closed engine throws rather than answer "dropped",
   * so its source does not take an unrecorded decision for a recorded one.
   */
  async trigger(sopName: string, event: TriggerEvent): Promise<AdmissionDecision> {
    // Below the disk's reserve no new work is taken (hub/disk/): refused before anything is
    // written, so the source keeps the event (no PUBACK) until there is room.
    const refusal = this.ctx.disk?.refusal() ?? null
    const why = refusal === null || typeof refusal === 'string' ? refusal : await refusal
    if (why !== null) throw new DiskRefusal(why)
    // A malformed event (not even an object) is refused by admitEvent with its reason, not thrown here.
    const once = (event as TriggerEvent | null | undefined)?.once
    if (!once) return this.admitEvent(sopName, event)
    return this.once.admit(sopName, once, () => this.admitEvent(sopName, event))
  }

  /** The admission record, and the event's once-only mark in the same batch (engine-api: `once`). */
  private admissionOps(sop: string, event: TriggerEvent, d: AdmissionDecision): BatchOp[] {
    const rec: AdmissionRecord = { sop, at: this.ctx.now(), source: event.source, ...d }
    return [this.ctx.store.admissionOp(rec), ...this.once.ops(sop, event, d, rec.at)]
  }

  private async admitEvent(sopName: string, event: TriggerEvent): Promise<AdmissionDecision> {
    const ctx = this.ctx
    const store = ctx.store
    if (ctx.closed) return { outcome: 'dropped', reason: 'the engine is closed' }
    // Again, with nothing awaited between here and the write: a once-only event may have waited
    // for its key (and the disk guard read the disk) since trigger() asked.
    const disk = ctx.disk
    if (disk?.refusing()) throw new DiskRefusal((disk.refusal() as string | null) ?? 'the disk is full')
    const bad = badEvent(event)
    if (bad) return { outcome: 'dropped', reason: `bad trigger event: ${bad}` }
    const sop = ctx.sops.get(sopName)
    if (!sop) {
      const d: AdmissionDecision = { outcome: 'dropped', reason: `no SOP named "${sopName}" is loaded` }
      await store.write(this.admissionOps(sopName, event, d))
      // The code rides on the answer only: admission records keep the shape they are stored in.
      return { ...d, code: 'SOP_NOT_LOADED' }
    }
    const verdict: AdmissionVerdict = admit(sop, ctx.view(sop.name))
    switch (verdict.outcome) {
      case 'started': {
        const run = this.driver.create(sop, event, 'started')
        const d: AdmissionDecision = { outcome: 'started', runId: run.id, reason: verdict.reason }
        try {
          await store.write([...store.runOps(run), ...this.admissionOps(sop.name, event, d)])
        } catch (err) {
          // Never stored, so it never was: it must not hold a slot until the next restart.
          ctx.live.delete(run.id)
          ctx.runSop.delete(run.id)
          throw err
        }
        ctx.runChanged(run)
        if (!ctx.closed) this.driver.spawn(run)
        return d
      }
      case 'deferred':
      case 'held': {
        const kept: KeptTrigger = {
          key: store.newKeptKey(ctx.now()),
          sop: sop.name,
          kind: verdict.outcome,
          event,
          reason: verdict.reason,
          at: ctx.now(),
        }
        const q = ctx.keptFor(sop.name)
        q.push(kept)
        const d: AdmissionDecision = { outcome: verdict.outcome, reason: verdict.reason }
        try {
          await store.write([store.keptOp(kept), ...this.admissionOps(sop.name, event, d)])
        } catch (err) {
          const at = q.indexOf(kept)
          if (at >= 0) q.splice(at, 1)
          throw err
        }
        ctx.changed({ kind: 'kept', sop: sop.name })
        return d
      }
      case 'coalesced': {
        const into = [...ctx.live.values()].filter((r) => r.sop === sop.name && holdsSlot(r.state)).pop()
        if (!into) return { outcome: 'dropped', reason: 'coalesce: no run in flight to fold into' }
        into.coalesced.push(event)
        into.coalescedCount++
        if (into.coalesced.length > MAX_COALESCED_KEPT) into.coalesced.shift()
        ctx.note(into, 0, 'info', `coalesced a ${event.type} trigger from ${event.source}`)
        const d: AdmissionDecision = { outcome: 'coalesced', runId: into.id, reason: verdict.reason }
        await store.write([...store.runOps(into), ...this.admissionOps(sop.name, event, d)])
        ctx.runChanged(into)
        return d
      }
      default: {
        const d: AdmissionDecision = { outcome: verdict.outcome, reason: verdict.reason }
        await store.write(this.admissionOps(sop.name, event, d))
        return d
      }
    }
  }

  /** Starts kept triggers that may run now (a slot freed, a run finished, a cooldown ended). */
  release(sopName: string): void {
    const ctx = this.ctx
    if (ctx.closed) return
    // A kept trigger is new work too: it waits for room with the rest.
    const disk = ctx.disk
    if (disk?.refusing()) {
      if (!this.releaseLater.has(sopName)) {
        this.releaseLater.add(sopName)
        void disk.room().then(() => {
          this.releaseLater.delete(sopName)
          this.release(sopName)
        })
      }
      return
    }
    const sop = ctx.sops.get(sopName)
    const q = ctx.kept.get(sopName)
    if (!sop || !q || q.length === 0) return
    while (q.length > 0) {
      const head = q[0]!
      const view = ctx.view(sopName)
      if (!mayRelease(sop, head.kind, view)) {
        const left = cooldownLeft(sop, view)
        if (left > 0 && !this.timers.has(sopName)) {
          const t = setTimeout(() => {
            this.timers.delete(sopName)
            this.release(sopName)
          }, left + 1)
          t.unref()
          this.timers.set(sopName, t)
        }
        return
      }
      q.shift()
      const run = this.driver.create(sop, head.event, 'started')
      const d: AdmissionDecision = {
        outcome: 'started',
        runId: run.id,
        reason: `released: was ${head.kind} (${head.reason})`,
      }
      ctx.note(run, 0, 'info', d.reason)
      // Still kept in the store until this write lands: a reopen meanwhile must not keep it again.
      this.unkeeping.add(head.key)
      const write = durable(ctx, run.id, [
        ctx.store.unkeepOp(head.key),
        ...ctx.store.runOps(run),
        ...this.admissionOps(sopName, head.event, d),
      ]).finally(() => this.unkeeping.delete(head.key))
      const p = write
        .then(() => {
          ctx.changed({ kind: 'kept', sop: sopName })
          ctx.runChanged(run)
          return ctx.closed ? undefined : this.driver.drive(run)
        })
        .catch((err: unknown) => {
          ctx.log.error({ run: run.id, err: errorText(err) }, 'run driver crashed')
        })
      ctx.track(p)
    }
  }

  /** No cooldown timer fires after close(). */
  clearTimers(): void {
    for (const t of this.timers.values()) clearTimeout(t)
    this.timers.clear()
  }
}
