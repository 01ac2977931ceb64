// Which SOPs an MQTT message starts, and which filters the hub listens on for that: the pure part
// of the peripheral and mqtt triggers, shared by both ways a message reaches them (intake.ts).
import type { TriggerType } from '../../sops/types.ts'
import type { Firer } from './fire.ts'
import type { TriggerPlan } from './plan.ts'
import { minimalFilters, topicMatches } from '../../mqtt/topics.ts'

export interface MessageMatch {
  sop: string
  type: Extract<TriggerType, 'peripheral' | 'mqtt'>
}

/**
 * The SOPs one message starts. A SOP fires at most once per message even when several of its
 * triggers match (sop-format: "any one starts a run"); peripheral triggers are checked first.
 */
export function dispatchMessage(
  plan: TriggerPlan,
  firer: Pick<Firer, 'matches'>,
  topic: string,
  text: string,
): MessageMatch[] {
  // A message starts one SOP or a few, so the ones already started are found by a look along
  // `out` rather than a Set made for every message.
  const out: MessageMatch[] = []
  const started = (sop: string): boolean => out.some((m) => m.sop === sop)
  for (const p of plan.peripheral) {
    if (p.filter !== topic || started(p.sop)) continue
    if (firer.matches(p.trigger.condition, text)) out.push({ sop: p.sop, type: 'peripheral' })
  }
  for (const m of plan.mqtt) {
    if (!topicMatches(m.filter, topic) || started(m.sop)) continue
    if (firer.matches(m.trigger.condition, text)) out.push({ sop: m.sop, type: 'mqtt' })
  }
  return out
}

/** The filters to subscribe to: `boards/+/+` whenever a peripheral trigger exists, plus mqtt topics not covered by it. */
export function subscriptionFilters(plan: TriggerPlan): string[] {
  const all = plan.mqtt.map((m) => m.filter)
  if (plan.peripheral.length > 0) all.push('boards/+/+')
  return minimalFilters(all)
}
