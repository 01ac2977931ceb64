// The boundary between what starts runs (trigger router, CLI, tools) and the SOP engine.
// Triggers only ever call `trigger`; what else the hub's engine offers is in hub-engine.ts.
import type { ErrorCode } from '../errors/codes.ts'
import type { Json, TriggerType } from './types.ts'

export interface TriggerEvent {
  /** Which kind of trigger fired, and a human-readable source (`boards/vend1/coin`, `cron`, a webhook path…). */
  type: TriggerType
  source: string
  /** The payload: text as received (board text, MQTT payload) or a JSON value (webhook body, manual). */
  payload: string | Json
  /** Epoch ms when the trigger fired. */
  at: number
  /**
   * Once-only admission, for a source that redelivers what it has not seen acknowledged (an AMQP
   * queue): the decision is stored under `key` in the same write as the admission, and with
   * `check` an event whose key is already stored is not admitted again: it gets the stored
   * decision back, marked `duplicate`. The key is per SOP (one message may start several SOPs).
   */
  once?: {
    key: string
    check: boolean
    /**
     * For a source whose keys are reused (an MQTT packet id, freed at each PUBACK): the mark
     * holds this fingerprint of the event, a check matches only the same fingerprint, and the
     * mark lasts until the source forgets it (`forgetOnce`) or writes the key again, instead of
     * a week.
     */
    fingerprint?: string
  }
}

export type AdmissionOutcome =
  | 'started'
  | 'deferred' // parallel, no slot free: kept durably, runs when a slot frees
  | 'held' // hold: kept durably until no run of this SOP is active or parked
  | 'coalesced' // folded into the run in flight (recorded on it)
  | 'dropped' // drop policy, no slot free
  | 'cooldown' // inside cooldown_secs after the last finished run

export interface AdmissionDecision {
  outcome: AdmissionOutcome
  /** The run started, or the run it was coalesced into. */
  runId?: string
  reason: string
  /** Why nothing was admitted, as a code: `SOP_NOT_LOADED` (no SOP of that name is loaded). */
  code?: Extract<ErrorCode, 'SOP_NOT_LOADED'>
  /** The event's `once` key was already admitted: this is that decision, and nothing new was stored. */
  duplicate?: true
}

export interface Engine {
  trigger(sopName: string, event: TriggerEvent): Promise<AdmissionDecision>
  /**
   * Drops fingerprinted once-only marks (`once.fingerprint`) the source no longer needs: the
   * event was acknowledged to its broker long enough ago that it will not come back. A mark
   * whose fingerprint differs belongs to a newer event under the same key, and stays.
   */
  forgetOnce?(marks: readonly { sop: string; key: string; fingerprint: string }[]): void
}

export interface KeptTrigger {
  key: string
  sop: string
  kind: 'deferred' | 'held'
  event: TriggerEvent
  reason: string
  at: number
}

export interface AdmissionRecord extends AdmissionDecision {
  sop: string
  at: number
  source: string
}
