// The one way a trigger source starts a run: check the condition, then hand the event to the
// engine. Whatever the engine or a condition throws is logged and reported as a value, so a
// bad payload or a failing SOP never takes the source (or the hub) down.
import type { AdmissionDecision, Engine, TriggerEvent } from '../../sops/engine-api.ts'
import type { Json } from '../../sops/types.ts'
import type { Log } from '../log.ts'
import { CodedError, type Failure, fail } from '../../errors/codes.ts'
import { errorText } from '../../errors/text.ts'
import { isDiskError } from '../disk/errors.ts'

/** `sops/conditions.ts` `matches`: payload is the raw text (the `$` form JSON-parses it). */
export type ConditionMatcher = (condition: string, payload: string) => boolean

/**
 * `DISK_FULL`: not recorded for want of disk (hub/disk/): the source should keep the event and try
 * again. `SOP_NOT_LOADED`: a manual start names no loaded SOP. Anything else the engine threw
 * keeps its code when it had one, else is `INTERNAL`.
 */
export type FireResult = { ok: true; decision: AdmissionDecision } | Failure

export interface Firer {
  /** Condition check; never throws (a condition that cannot be evaluated does not match). */
  matches(condition: string, payload: string): boolean
  fire(sop: string, event: TriggerEvent): Promise<FireResult>
}

export function payloadText(payload: string | Json): string {
  return typeof payload === 'string' ? payload : JSON.stringify(payload)
}

export function createFirer(engine: Engine, matcher: ConditionMatcher, log: Log): Firer {
  return {
    matches(condition, payload) {
      if (condition.trim() === '') return true
      try {
        return matcher(condition, payload)
      } catch (err) {
        log.warn({ condition, err: errorText(err) }, 'condition could not be evaluated; treated as no match')
        return false
      }
    },
    async fire(sop, event) {
      try {
        const decision = await engine.trigger(sop, event)
        // Per event: debug, not info (a line per event was a measurable share of the hub's CPU).
        log.debug?.(
          {
            sop,
            trigger: event.type,
            source: event.source,
            outcome: decision.outcome,
            runId: decision.runId,
          },
          'trigger admitted',
        )
        return { ok: true, decision }
      } catch (err) {
        const error = errorText(err)
        // The disk guard says so once for all of them; a line per event would flood the log.
        if (isDiskError(err)) {
          log.debug?.({ sop, trigger: event.type, source: event.source, err: error }, 'trigger not recorded')
          return fail('DISK_FULL', error)
        }
        log.error(
          { sop, trigger: event.type, source: event.source, err: error },
          'engine refused the trigger',
        )
        return fail(err instanceof CodedError ? err.code : 'INTERNAL', error)
      }
    },
  }
}
