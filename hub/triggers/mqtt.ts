// Peripheral and mqtt triggers, both fed by one MQTT subscription set (the router never reads
// the bridge). `dispatchMessage` is the pure part: which SOPs a message starts. `MessageSource`
// wires it to a connected mqtt.js client.
import { createHash } from 'node:crypto'
import type { MqttClient } from 'mqtt'
import type { Engine, TriggerEvent } from '../../sops/engine-api.ts'
import type { TriggerType } from '../../sops/types.ts'
import type { Log } from '../log.ts'
import type { Firer, FireResult } from './fire.ts'
import type { TriggerPlan } from './plan.ts'
import { minimalFilters, topicMatches } from '../../mqtt/topics.ts'
import { takeHeldMessages } from './session-gate.ts'
import { Fifo } from './fifo.ts'

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

/** Messages being admitted at once; at the cap the session stops reading (backpressure). */
export const DEFAULT_MAX_IN_FLIGHT = 10_000

/**
 * How long after its PUBACK was written a message's once-only mark is kept. A PUBACK written to
 * the socket can still be lost if the hub dies at once (the kernel resets a socket closed with
 * unread data), and a broker records it when it gets to it: the embedded broker, sharing the
 * hub's process and LevelDB thread pool, was seen taking over 2 s under a burst on two busy
 * cores. Until it has, a broker that dies (or a hub killed with it) sends the message again.
 */
export const FORGET_AFTER_MS = 30_000

/** Seconds of no moment with nothing in flight after which the hub says it is behind. */
export const BEHIND_AFTER_S = 5

export interface MqttBacklog {
  /** Messages received and not yet admitted (their PUBACK waits for the admission). */
  inFlight: number
  /** The most there have been at once since the start. */
  peak: number
  /** Times the session stopped reading because `inFlight` reached the cap. */
  paused: number
  /** Seconds the hub has had messages in flight without a break (0: it is keeping up). */
  busySeconds: number
  /** Times a busy stretch reached BEHIND_AFTER_S (each one warned). */
  behind: number
  /** Redelivered messages recognised as already admitted (acknowledged, not started again). */
  repeats: number
  /** The `inFlight` at which the session stops reading. */
  cap: number
}

export interface MessageSource {
  /** Offer one message to the triggers (also used directly by tests and the bench). */
  handle(topic: string, payload: Buffer | string, now: number): Promise<FireResult[]>
  backlog(): MqttBacklog
  setPlan(plan: TriggerPlan): Promise<void>
  stop(): Promise<void>
}

interface PacketLike {
  cmd?: string
  retain?: boolean
  qos?: number
  messageId?: number
  dup?: boolean
}

/** mqtt.js internals the source steers (mqtt 5.x, lib/handlers/publish.ts and lib/client.ts). */
interface ClientInternals {
  handleMessage(packet: PacketLike, callback: (err?: Error) => void): void
  _sendPacket(packet: PacketLike, cb?: (err?: Error) => void, ...rest: unknown[]): void
}

/** One received QoS 1 message waiting for its PUBACK, in arrival order. */
interface PendingAck {
  messageId: number
  gen: number
  /** The admissions are stored (or failed: a failure is logged, and the message acknowledged). */
  recorded: boolean
  /** mqtt.js has asked to send the PUBACK (the packet and its write callback). */
  send: (() => void) | null
  marks: { sop: string; key: string; fingerprint: string }[]
}

/** The fingerprint of a message's content: a redelivery has the same one. */
export function messageFingerprint(topic: string, payload: Buffer): string {
  return createHash('sha1').update(topic).update('\u0000').update(payload).digest('base64url')
}

export function createMessageSource(
  client: MqttClient,
  firer: Firer,
  log: Log,
  initial: TriggerPlan,
  opts: { maxInFlight?: number; engine?: Pick<Engine, 'forgetOnce'> } = {},
): MessageSource {
  const maxInFlight = opts.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT
  let plan = initial
  let subscribed: string[] = []
  let inFlight = 0
  const stats = { peak: 0, paused: 0, behind: 0, repeats: 0 }
  let busySince = -1
  let lastBehindWarn = -Infinity
  // mqtt.js continuations held while the cap is reached: it reads no further packet until one runs.
  const held: (() => void)[] = []
  // PUBACKs in arrival order (MQTT 3.1.1 §4.6: a client sends PUBACKs in the order the PUBLISH
  // packets came), each released once its message's admissions are stored.
  const acks = new Fifo<PendingAck>()
  const byId = new Map<number, PendingAck>()
  // A new connection: PUBACKs owed on the old one are moot (the broker sends those messages again).
  let gen = 0
  const forgetting: { at: number; marks: PendingAck['marks'] }[] = []
  const internals = client as unknown as ClientInternals
  const sessionKey = `mqtt ${client.options.clientId ?? ''}`

  const handle = async (
    topic: string,
    payload: Buffer | string,
    now: number,
    once?: (sop: string) => TriggerEvent['once'],
  ): Promise<FireResult[]> => {
    if (payload.length > MAX_TRIGGER_PAYLOAD) {
      log.warn(
        { topic, bytes: payload.length },
        `message larger than ${MAX_TRIGGER_PAYLOAD} bytes ignored by triggers`,
      )
      return []
    }
    const text = typeof payload === 'string' ? payload : payload.toString('utf8')
    const matched = dispatchMessage(plan, firer, topic, text)
    if (matched.length === 0) return []
    return Promise.all(
      matched.map((m) => {
        const o = once?.(m.sop)
        return firer.fire(m.sop, {
          type: m.type,
          source: topic,
          payload: text,
          at: now,
          ...(o ? { once: o } : {}),
        })
      }),
    )
  }

  const flushAcks = (): void => {
    while (acks.length > 0) {
      const head = acks.peek()!
      if (head.gen !== gen) {
        acks.shift()
        if (byId.get(head.messageId) === head) byId.delete(head.messageId)
        continue
      }
      if (!head.recorded || !head.send) return
      acks.shift()
      if (byId.get(head.messageId) === head) byId.delete(head.messageId)
      head.send()
    }
  }

  const release = (): void => {
    while (held.length > 0 && inFlight < maxInFlight) held.shift()!()
  }

  const onMessage = (topic: string, payload: Buffer, packet: PacketLike): void => {
    // A retained message replayed on subscribe is old state (availability, last value), not a
    // new event: starting runs from it would repeat them at every hub start.
    if (packet.retain) return
    let pending: PendingAck | undefined
    let once: ((sop: string) => TriggerEvent['once']) | undefined
    if (packet.qos === 1 && packet.messageId !== undefined) {
      pending = { messageId: packet.messageId, gen, recorded: false, send: null, marks: [] }
      acks.push(pending)
      byId.set(packet.messageId, pending)
      // The admission and a mark of this message go in one write; a copy the broker sends again
      // (its PUBACK never arrived) finds the mark and is acknowledged without a second run. The
      // fingerprint is taken only for a message that starts something (half of a busy topic may not).
      let fingerprint: string | undefined
      const key = `${sessionKey} ${packet.messageId}`
      const p = pending
      once = (sop) => {
        fingerprint ??= messageFingerprint(topic, payload)
        p.marks.push({ sop, key, fingerprint })
        return { key, check: true, fingerprint }
      }
    }
    inFlight++
    if (inFlight > stats.peak) stats.peak = inFlight
    if (busySince < 0) busySince = Date.now()
    handle(topic, payload, Date.now(), once)
      .then((results) => {
        if (results.some((r) => r.ok && r.decision.duplicate)) stats.repeats++
      })
      .catch((err: unknown) => log.error({ topic, err: String(err) }, 'trigger dispatch failed'))
      .finally(() => {
        inFlight--
        if (inFlight === 0) busySince = -1
        if (pending) {
          pending.recorded = true
          flushAcks()
        }
        release()
      })
  }

  // Before mqtt.js sends a PUBACK (or reads the next packet), this runs: at the cap it waits.
  // mqtt.js's own, taken once the session gate (if any) has given them back.
  let ownSendPacket: ClientInternals['_sendPacket'] = internals._sendPacket
  const onClose = (): void => {
    gen++
    flushAcks()
  }
  // Messages the session got before the router listened (held by session-gate.ts) come first.
  takeHeldMessages(client, onMessage as (t: string, p: Buffer, packet: object) => void, () => {
    ownSendPacket = internals._sendPacket
    internals.handleMessage = (_packet, callback) => {
      if (inFlight < maxInFlight) return callback()
      stats.paused++
      warnBehind(`${inFlight} messages are being admitted (the cap): the hub stopped reading`)
      held.push(() => callback())
    }
    // The PUBACK of a message with triggers waits for its admissions to be stored; mqtt.js goes
    // on reading meanwhile (its callback runs now), so many messages share one sync batch.
    internals._sendPacket = function (packet, cb, ...rest) {
      const p =
        packet.cmd === 'puback' && packet.messageId !== undefined ? byId.get(packet.messageId) : undefined
      if (!p) return ownSendPacket.call(this, packet, cb, ...rest)
      // Asked twice (a continuation of a connection since replaced): the first one stands.
      if (p.send) return cb?.()
      p.send = () => {
        if (!client.connected) return
        ownSendPacket.call(this, packet, () => {
          if (p.marks.length > 0) forgetting.push({ at: Date.now(), marks: p.marks })
        })
      }
      cb?.()
      flushAcks()
    }
    client.on('close', onClose)
    client.on('message', onMessage)
  })

  function warnBehind(why: string): void {
    if (Date.now() - lastBehindWarn < 10_000) return
    lastBehindWarn = Date.now()
    log.warn(
      { inFlight, peak: stats.peak, busySeconds: busySeconds() },
      `the hub is behind its MQTT broker: ${why}. The broker keeps what the hub has not taken ` +
        'for its session, up to its own limit, and drops the rest (Mosquitto max_queued_messages, ' +
        'default 1000; EMQX mqueue max_len, default 1000): see hub/README.md, External broker settings',
    )
  }
  const busySeconds = (): number => (busySince < 0 ? 0 : Math.floor((Date.now() - busySince) / 1000))

  // Once a second: marks of messages acknowledged long enough ago are forgotten, in one write;
  // a busy stretch that has lasted BEHIND_AFTER_S is said out loud.
  let behindCounted = -1
  const tick = setInterval(() => {
    const cutoff = Date.now() - FORGET_AFTER_MS
    let n = 0
    while (n < forgetting.length && forgetting[n]!.at <= cutoff) n++
    if (n > 0) opts.engine?.forgetOnce?.(forgetting.splice(0, n).flatMap((f) => f.marks))
    if (busySince >= 0 && busySeconds() >= BEHIND_AFTER_S) {
      if (behindCounted !== busySince) {
        behindCounted = busySince
        stats.behind++
      }
      warnBehind(`messages have been in flight without a break for ${busySeconds()} s (${inFlight} now)`)
    }
  }, 1000)
  tick.unref()

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
    handle: (topic, payload, now) => handle(topic, payload, now),
    backlog: () => ({ inFlight, ...stats, busySeconds: busySeconds(), cap: maxInFlight }),
    async setPlan(next) {
      plan = next
      await resubscribe()
    },
    // Subscriptions are left in place: the router's session is persistent (clean: false), so an
    // external broker queues QoS 1 events for it while the hub is down.
    async stop() {
      client.off('message', onMessage)
      client.off('close', onClose)
      clearInterval(tick)
      // Back to mqtt.js's own methods (on its prototype).
      delete (client as unknown as Partial<ClientInternals>).handleMessage
      delete (client as unknown as Partial<ClientInternals>)._sendPacket
      // Messages still being admitted keep their PUBACK until stored (or the broker sends them
      // again to the next start); held reads go on.
      for (const h of held.splice(0)) h()
    },
  }
}
