// Routing between steps (sops/RUNTIME.md, "Routing"). Pure: conditions are evaluated by an
// injected function so this file imports no parser and no I/O.
import type { Json, Sop, Step } from '../types.ts'

export type Route =
  | { kind: 'step'; step: number }
  | { kind: 'end'; reason: string }
  | { kind: 'fail'; error: string }

/** What step guards read: `$.steps.N…`, `$.trigger…`, `$.decisions.N`. */
export interface GuardContext {
  steps: Record<string, Json>
  trigger: Json
  decisions: Record<string, boolean>
}

/** True when `condition` matches `payload`; a condition that cannot be evaluated does not match (sops/FORMAT.md, "Conditions"). */
export type EvalCondition = (condition: string, payload: Json) => boolean

/** A step entered more often than this fails the run (sops/RUNTIME.md, "The visit cap"). */
export const MAX_VISITS = 256

export function stepByNumber(sop: Sop, n: number): Step | undefined {
  return sop.steps[n - 1]?.number === n ? sop.steps[n - 1] : sop.steps.find((s) => s.number === n)
}

export function firstStep(sop: Sop): Route {
  const first = sop.steps[0]
  return first ? { kind: 'step', step: first.number } : { kind: 'end', reason: 'the SOP has no steps' }
}

/** The next step in order, or the end of the run past the last one. */
export function nextInOrder(sop: Sop, after: number): Route {
  const idx = sop.steps.findIndex((s) => s.number === after)
  const next = idx >= 0 ? sop.steps[idx + 1] : undefined
  return next
    ? { kind: 'step', step: next.number }
    : { kind: 'end', reason: `step ${after} was the last step` }
}

function target(sop: Sop, from: number, to: number, via: string): Route {
  return stepByNumber(sop, to)
    ? { kind: 'step', step: to }
    : { kind: 'fail', error: `step ${from}: ${via} names step ${to}, which does not exist` }
}

/**
 * Why a step reached by routing does not run, or null when it runs. Checked in this order:
 * `unless_decided:` answered yes, `decide:` answered no, unmet `depends_on:`. (`when:` never
 * skips a step: it is read after the step has run and guards its routing; see routeAfterComplete.)
 */
export function skipReason(step: Step, ctx: GuardContext, completed: (n: number) => boolean): string | null {
  if (step.unlessDecided !== undefined && ctx.decisions[String(step.unlessDecided)] === true) {
    return `unless_decided: step ${step.unlessDecided}'s question was answered yes`
  }
  if (step.decide !== undefined && ctx.decisions[String(step.number)] !== true) {
    return `decide: "${step.decide}" was answered no`
  }
  const unmet = step.dependsOn.filter((d) => !completed(d))
  if (unmet.length > 0) return `depends_on: step ${unmet.join(', ')} did not complete`
  return null
}

/** After a skipped step: the next in order, or the end when the skipped step is terminal (sops/RUNTIME.md, "Guards before a step"). */
export function routeAfterSkip(sop: Sop, step: Step): Route {
  if (step.terminal) return { kind: 'end', reason: `step ${step.number} was skipped and is terminal` }
  return nextInOrder(sop, step.number)
}

/**
 * After a completed step (sops/RUNTIME.md, "Routing"): `when:` false → the next step
 * in order, or the end when terminal; else the first matching switch port, else next:, else
 * terminal, else the next in order. `ctx` holds this step's own output, so `when:
 * $.steps.3.left > 0` with `next: 3` on step 3 loops until the value runs out (or the visit cap).
 */
export function routeAfterComplete(sop: Sop, step: Step, ctx: GuardContext, evalCond: EvalCondition): Route {
  if (step.when !== undefined && step.when.trim() !== '' && !evalCond(step.when, ctx as unknown as Json)) {
    if (step.terminal)
      return { kind: 'end', reason: `step ${step.number} is terminal (when: ${step.when} is false)` }
    const after = nextInOrder(sop, step.number)
    return after.kind === 'end'
      ? { kind: 'end', reason: `${after.reason} (when: ${step.when} is false)` }
      : after
  }
  if (step.switch.length > 0) {
    for (const port of step.switch) {
      const hit = port.condition.trim() === '' || evalCond(port.condition, ctx as unknown as Json)
      if (!hit) continue
      if (port.target === null)
        return {
          kind: 'fail',
          error: `step ${step.number}: switch port "${port.name}" matched but has no target step`,
        }
      return target(sop, step.number, port.target, `switch port "${port.name}"`)
    }
    return { kind: 'end', reason: `step ${step.number}: no switch port matched` }
  }
  if (step.next !== undefined) return target(sop, step.number, step.next, 'next:')
  if (step.terminal) return { kind: 'end', reason: `step ${step.number} is terminal` }
  return nextInOrder(sop, step.number)
}

export type FailureRoute = { kind: 'retry'; attempt: number } | Route

/** After a failed attempt (`attempts` failures so far, this one included): retry, goto, or fail the run. */
export function routeAfterFailure(sop: Sop, step: Step, attempts: number, error: string): FailureRoute {
  const f = step.onFailure
  if (f.kind === 'retry' && attempts <= f.count) return { kind: 'retry', attempt: attempts }
  if (f.kind === 'goto') return target(sop, step.number, f.step, 'on_failure: goto')
  const tail = f.kind === 'retry' ? ` (after ${f.count} ${f.count === 1 ? 'retry' : 'retries'})` : ''
  return { kind: 'fail', error: `step ${step.number} failed${tail}: ${error}` }
}
