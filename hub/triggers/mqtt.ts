// Peripheral and mqtt triggers fed by the hub's mqtt.js session on an external broker (on the
// embedded one, feed.ts takes them inside the broker). Each QoS 1 message's PUBACK waits for
// its admissions.
import type { MqttClient } from 'mqtt'
import type { Log } from '../log.ts'
import type { Firer } from './fire.ts'
import type { TriggerPlan } from './plan.ts'
import { subscriptionFilters } from './dispatch.ts'
import { type MessageSource, type SourceOptions, type OnceMark, createIntake, onceKeys } from './intake.ts'
import { takeHeldMessages } from './session-gate.ts'
import { Fifo } from './fifo.ts'

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
  /**
   * The admissions are stored (or failed: a failure is logged, and the message acknowledged; one
   * for want of disk waits for room instead, intake.ts).
   */
  recorded: boolean
  /** mqtt.js has asked to send the PUBACK (the packet and its write callback). */
  send: (() => void) | null
  marks: OnceMark[]
}

/** What the hub says when it lags an external broker: the limit that drops events next. */
const BEHIND_EXTERNAL =
  'The broker keeps what the hub has not taken for its session, up to its own limit, and drops ' +
  'the rest (Mosquitto max_queued_messages, default 1000; EMQX mqueue max_len, default 1000): ' +
  'see hub/README.md, External broker settings'

export function createMessageSource(
  client: MqttClient,
  firer: Firer,
  log: Log,
  initial: TriggerPlan,
  opts: SourceOptions = {},
): MessageSource {
  const intake = createIntake(firer, log, initial, {
    ...opts,
    atCap: 'the hub stopped reading',
    behindAdvice: BEHIND_EXTERNAL,
  })
  let subscribed: string[] = []
  // mqtt.js continuations held while the cap is reached: it reads no further packet until one runs.
  const held: (() => void)[] = []
  // PUBACKs in arrival order (MQTT 3.1.1 §4.6: a client sends PUBACKs in the order the PUBLISH
  // packets came), each released once its message's admissions are stored.
  const acks = new Fifo<PendingAck>()
  const byId = new Map<number, PendingAck>()
  // A new connection: PUBACKs owed on the old one are moot (the broker sends those messages again).
  let gen = 0
  const internals = client as unknown as ClientInternals
  const sessionKey = `mqtt ${client.options.clientId ?? ''}`

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

  const disk = opts.disk
  const release = (): void => {
    while (held.length > 0 && intake.inFlight() < intake.cap && !disk?.refusing()) held.shift()!()
  }
  // While the disk refuses new work (hub/disk/) the session reads no more: what the hub has not
  // taken stays with the broker, and reading goes on once there is room.
  let waitingForRoom = false
  const holdForRoom = (callback: () => void): void => {
    held.push(callback)
    if (waitingForRoom || !disk) return
    waitingForRoom = true
    void disk.room().then(() => {
      waitingForRoom = false
      release()
    })
  }

  const onMessage = (topic: string, payload: Buffer, packet: PacketLike): void => {
    // A retained message replayed on subscribe is old state (availability, last value), not a
    // new event: starting runs from it would repeat them at every hub start.
    if (packet.retain) return
    let pending: PendingAck | undefined
    if (packet.qos === 1 && packet.messageId !== undefined) {
      pending = { messageId: packet.messageId, gen, recorded: false, send: null, marks: [] }
      acks.push(pending)
      byId.set(packet.messageId, pending)
    }
    const once = pending && onceKeys(`${sessionKey} ${pending.messageId}`, topic, payload, pending.marks)
    intake.take(
      topic,
      payload,
      once,
      () => {
        if (pending) {
          pending.recorded = true
          flushAcks()
        }
        release()
      },
      pending !== undefined,
    )
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
      if (disk?.refusing()) return holdForRoom(() => callback())
      if (intake.inFlight() < intake.cap) return callback()
      intake.paused()
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
        // No write callback: mqtt.js adds a 'drain' listener for each one while the socket is
        // full, over a thousand in a burst (Node's leak warning in the hub's log). The marks'
        // 30 s count from the hand-over to the socket instead.
        ownSendPacket.call(this, packet)
        intake.forgetLater(p.marks)
      }
      cb?.()
      flushAcks()
    }
    client.on('close', onClose)
    client.on('message', onMessage)
  })

  const resubscribe = async (plan: TriggerPlan): Promise<void> => {
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
    handle: (topic, payload, now) => intake.handle(topic, payload, now),
    backlog: () => intake.backlog(),
    async setPlan(next) {
      intake.setPlan(next)
      await resubscribe(next)
    },
    // Subscriptions are left in place: the router's session is persistent (clean: false), so an
    // external broker queues QoS 1 events for it while the hub is down.
    async stop() {
      client.off('message', onMessage)
      client.off('close', onClose)
      intake.stop()
      // Back to mqtt.js's own methods (on its prototype).
      delete (client as unknown as Partial<ClientInternals>).handleMessage
      delete (client as unknown as Partial<ClientInternals>)._sendPacket
      // Messages still being admitted keep their PUBACK until stored (or the broker sends them
      // again to the next start); held reads go on.
      for (const h of held.splice(0)) h()
    },
  }
}
