// Admission (sops/RUNTIME.md, "Admission"). Pure: the engine passes a view of this SOP's runs; the
// verdict says what happens to the trigger and why, and the engine records both.
import type { AdmissionOutcome } from '../engine-api.ts'
import type { Sop } from '../types.ts'

export interface AdmissionView {
  /** Runs of this SOP holding a slot (pending or running). */
  active: number
  /** Runs of this SOP parked at a gate (they hold no slot). */
  parked: number
  /** When the last run of this SOP finished, if any. */
  lastFinishedAt?: number
  now: number
}

export interface AdmissionVerdict {
  outcome: AdmissionOutcome
  reason: string
}

/** Milliseconds left in the cooldown, 0 when none. */
export function cooldownLeft(sop: Sop, view: Pick<AdmissionView, 'lastFinishedAt' | 'now'>): number {
  if (sop.cooldownSecs <= 0 || view.lastFinishedAt === undefined) return 0
  return Math.max(0, view.lastFinishedAt + sop.cooldownSecs * 1000 - view.now)
}

export function admit(sop: Sop, view: AdmissionView): AdmissionVerdict {
  const left = cooldownLeft(sop, view)
  if (left > 0)
    return {
      outcome: 'cooldown',
      reason: `cooldown: ${Math.ceil(left / 1000)}s of cooldown_secs=${sop.cooldownSecs} left since the last run finished`,
    }
  const max = Math.max(1, sop.maxConcurrent)
  const slotFree = view.active < max
  switch (sop.admissionPolicy) {
    case 'parallel':
      return slotFree
        ? { outcome: 'started', reason: `slot free (${view.active}/${max} active)` }
        : {
            outcome: 'deferred',
            reason: `parallel: no slot free (${view.active}/${max} active); deferred until one frees`,
          }
    case 'hold':
      // Hold admits only when no run of this SOP is active or parked (sops/RUNTIME.md, "Admission policies").
      return view.active === 0 && view.parked === 0
        ? { outcome: 'started', reason: 'hold: no run of this SOP active or parked' }
        : {
            outcome: 'held',
            reason: `hold: ${view.active} active and ${view.parked} parked run(s) of this SOP; held until none`,
          }
    case 'coalesce':
      return slotFree
        ? { outcome: 'started', reason: `slot free (${view.active}/${max} active)` }
        : {
            outcome: 'coalesced',
            reason: `coalesce: no slot free (${view.active}/${max} active); the run in flight covers it`,
          }
    case 'drop':
      return slotFree
        ? { outcome: 'started', reason: `slot free (${view.active}/${max} active)` }
        : { outcome: 'dropped', reason: `drop: no slot free (${view.active}/${max} active); discarded` }
  }
}

/** May a kept trigger (deferred or held) start now? Cooldown is waited out, never a reason to drop it. */
export function mayRelease(sop: Sop, kind: 'deferred' | 'held', view: AdmissionView): boolean {
  if (cooldownLeft(sop, view) > 0) return false
  if (kind === 'held') return view.active === 0 && view.parked === 0
  return view.active < Math.max(1, sop.maxConcurrent)
}
