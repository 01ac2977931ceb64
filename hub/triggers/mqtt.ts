// Peripheral and mqtt triggers, both fed by one MQTT subscription set (the router never reads
// the bridge). `dispatchMessage` is the pure part: which SOPs a message starts. `MessageSource`
// wires it to a connected mqtt.js client.
import type { MqttClient } from 'mqtt'
import type { TriggerType } from '../../sops/types.ts'
import type { Log } from '../log.ts'
import type { Firer, FireResult } from './fire.ts'
import type { TriggerPlan } from './plan.ts'
import { minimalFilters, topicMatches } from '../../mqtt/topics.ts'

/** Messages bigger than this are not offered to triggers (logged and ignored). */
export const MAX_TRIGGER_PAYLOAD = 256 * 1024

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
  const out: MessageMatch[] = []
  const seen = new Set<string>()
  for (const p of plan.peripheral) {
    if (seen.has(p.sop) || p.filter !== topic) continue
    if (firer.matches(p.trigger.condition, text)) {
      seen.add(p.sop)
      out.push({ sop: p.sop, type: 'peripheral' })
    }
  }
  for (const m of plan.mqtt) {
    if (seen.has(m.sop) || !topicMatches(m.filter, topic)) continue
    if (firer.matches(m.trigger.condition, text)) {
      seen.add(m.sop)
      out.push({ sop: m.sop, type: 'mqtt' })
    }
  }
  return out
}

/** The filters to subscribe to: `boards/+/+` whenever a peripheral trigger exists, plus mqtt topics not covered by it. */
export function subscriptionFilters(plan: TriggerPlan): string[] {
  const all = plan.mqtt.map((m) => m.filter)
  if (plan.peripheral.length > 0) all.push('boards/+/+')
  return minimalFilters(all)
}

/** Messages being handed to the engine at once, beyond which new ones are dropped and counted. */
export const DEFAULT_MAX_IN_FLIGHT = 10_000

export interface MessageSource {
  /** Offer one message to the triggers (also used directly by tests and the bench). */
  handle(topic: string, payload: Buffer | string, now: number): Promise<FireResult[]>
  /** Messages dropped because the engine was not keeping up. */
  dropped(): number
  setPlan(plan: TriggerPlan): Promise<void>
  stop(): Promise<void>
}

export function createMessageSource(
  client: MqttClient,
  firer: Firer,
  log: Log,
  initial: TriggerPlan,
  maxInFlight = DEFAULT_MAX_IN_FLIGHT,
): MessageSource {
  let plan = initial
  let subscribed: string[] = []
  let inFlight = 0
  let dropped = 0
  let lastDropWarn = -Infinity

  const handle = async (topic: string, payload: Buffer | string, now: number): Promise<FireResult[]> => {
    if (payload.length > MAX_TRIGGER_PAYLOAD) {
      log.warn(
        { topic, bytes: payload.length },
        `message larger than ${MAX_TRIGGER_PAYLOAD} bytes ignored by triggers`,
      )
      return []
    }
    const text = typeof payload === 'string' ? payload : payload.toString('utf8')
    const matched = dispatchMessage(plan, firer, topic, text)
    return Promise.all(
      matched.map((m) => firer.fire(m.sop, { type: m.type, source: topic, payload: text, at: now })),
    )
  }

  const onMessage = (topic: string, payload: Buffer, packet: { retain?: boolean }): void => {
    // A retained message replayed on subscribe is old state (availability, last value), not a
    // new event: starting runs from it would repeat them at every hub start.
    if (packet.retain) return
    // A flooding board or client must not grow memory without bound while the engine's durable
    // admission catches up: past the cap, messages are dropped, counted and warned about.
    if (inFlight >= maxInFlight) {
      dropped++
      if (Date.now() - lastDropWarn > 10_000) {
        lastDropWarn = Date.now()
        log.warn({ topic, dropped, inFlight }, 'engine is not keeping up: trigger messages dropped')
      }
      return
    }
    inFlight++
    handle(topic, payload, Date.now())
      .catch((err: unknown) => log.error({ topic, err: String(err) }, 'trigger dispatch failed'))
      .finally(() => inFlight--)
  }
  client.on('message', onMessage)

  const resubscribe = async (): Promise<void> => {
    const wanted = subscriptionFilters(plan)
    const drop = subscribed.filter((f) => !wanted.includes(f))
    const add = wanted.filter((f) => !subscribed.includes(f))
    if (drop.length > 0) await client.unsubscribeAsync(drop)
    if (add.length > 0) {
      const granted = await client.subscribeAsync(add, { qos: 1 })
      for (const g of granted)
        if (g.qos === 128) log.error({ filter: g.topic }, 'broker refused the subscription')
    }
    subscribed = wanted
    log.info({ filters: wanted }, 'trigger subscriptions')
  }

  return {
    handle,
    dropped: () => dropped,
    async setPlan(next) {
      plan = next
      await resubscribe()
    },
    // Subscriptions are left in place: the router's session is persistent (clean: false), so an
    // external broker queues QoS 1 events for it while the hub is down.
    async stop() {
      client.off('message', onMessage)
    },
  }
}
