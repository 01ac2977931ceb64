// What admission refuses before it looks at a SOP: an event that is not the shape the trigger
// boundary promises (sops/engine-api.ts `TriggerEvent`): the engine checks its callers rather
// than trusts them. Pure: the reason out; the engine answers "dropped" with it.
import type { TriggerEvent } from '../engine-api.ts'

/** Null for a well-formed event, else what is wrong with it. */
export function badEvent(e: TriggerEvent): string | null {
  if (typeof e !== 'object' || e === null) return 'not an object'
  if (typeof e.type !== 'string') return 'type is missing'
  if (typeof e.source !== 'string') return 'source is missing'
  if (typeof e.at !== 'number' || !Number.isFinite(e.at)) return 'at is not a number'
  if (e.payload === undefined) return 'payload is missing'
  return null
}
