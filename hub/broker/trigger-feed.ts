// The hub's triggers subscribed inside the embedded broker, as a function (`aedes.subscribe`), not
// as an MQTT session over loopback. A session meant, for every event: the broker storing a copy
// for it in LevelDB and deleting it at its PUBACK, a packet written, parsed and acknowledged on
// each side. Here the trigger source gets the very message Aedes publishes, and the publisher's
// PUBACK waits for the event's admission to be stored (ack-after-store.ts `alsoAwait`): what the
// broker acknowledged is recorded by the engine, with no copy in between.
//
// A message is handed over and Aedes goes on at once (other subscribers, the publisher's next
// packets); the PUBACK alone waits, and Aedes reads nothing more from that publisher until the
// packets it is handling are done, PUBACKs written, but for one slice read ahead of them
// (read-slices.ts): backpressure, per publisher. Once `cap` messages are being admitted, a client's
// next message on a trigger topic waits before it is published (`whenRoom`), whatever its QoS:
// Aedes reads no more from that client, and everybody else's messages go on. The hub's own messages
// wait at the hand-over instead, each holding one of mqemitter's slots (Aedes' `concurrency`, 100):
// a flood of them past the cap delays the broker's other messages too, never drops them.
// A QoS 2 message always waits, since Aedes sends its PUBREC once the publish is done.
//
// While the disk has no room for new work (`hold`, hub/disk/), a client's message on a trigger
// topic, and any retained one, waits the same way before it is published: nothing is stored, no
// PUBACK goes out, and the publisher keeps the message until there is room (MQTT 3.1.1 has no
// negative PUBACK). Held longer than its keepalive, the client is disconnected by Aedes, and
// sends the message again when it reconnects.
//
// Until the trigger router attaches (and after it detaches), messages on the trigger filters are
// kept here in order, their PUBACKs withheld; the router takes them first. The hub's own messages
// are not withheld then: the hub publishes its state before its router starts, and would wait for
// itself. They are still kept for the router, and admitted once it attaches. Once it is attached,
// the hub's own QoS 1 and 2 publishes on a trigger topic finish when their runs are admitted.
import type { Aedes, AedesPublishPacket } from 'aedes'
import { anyFilterMatches } from '../../mqtt/topics.ts'
import { type AckHooks, keyOf } from './ack-after-store.ts'
import { Fifo } from '../triggers/fifo.ts'

export interface FedMessage {
  topic: string
  payload: Buffer
  qos: number
  /**
   * The once-only key of a message that may come again: a client's QoS 1 message under its packet
   * id (`from <client> <id>`), which the client sends again if its PUBACK was lost, or an older
   * session's queued event (leftovers.ts). Null otherwise.
   */
  once: string | null
}

/** Takes a message; `done` once its admissions are stored (or failed, and said so). */
export type FeedTake = (message: FedMessage, done: () => void) => void

export interface TriggerFeed {
  /** Messages on these filters go to the triggers. */
  setFilters(filters: readonly string[]): void
  /** True when a message on `topic` goes to the triggers. */
  wants(topic: string): boolean
  /** From now on messages go to `take`, the kept ones first; `onCap` when the hand-over waits. */
  attach(take: FeedTake, opts: { cap: number; onCap: () => void }): void
  /** Messages are kept again (the router stopped); those being admitted finish. */
  detach(): void
  /** Messages kept for the router, not yet taken. */
  kept(): number
  /** Puts `messages` first in line for the router; resolves once all of them are admitted. */
  keepFirst(messages: readonly FedMessage[]): Promise<void>
  /**
   * On: clients' messages on trigger topics and retained ones wait before they are published
   * (the disk is below its reserve). Off: they go on, in the order they came.
   */
  hold(on: boolean): void
  /** Clients' messages waiting before they are published (held for room, or at the cap). */
  waiting(): number
  /** The hooks the PUBACK of a client's QoS 1 message goes through (ack-after-store.ts). */
  ackHooks: AckHooks
}

interface Expected {
  messageId: number
  clientId: string
  admitted: () => void
}

interface Kept {
  message: FedMessage
  /** Aedes' callback, when the hand-over waits for the admission. */
  release: (() => void) | null
  expected: Expected | undefined
  after?: () => void
}

/** Messages kept before the router attaches and says its own cap. */
const CAP_BEFORE_ATTACH = 10_000

/** Subscribes the feed in `aedes` now: call it before the broker listens. */
export function triggerFeed(
  aedes: Aedes,
  opts: { filters: readonly string[]; hubClientId: string | null },
): TriggerFeed {
  let wants = anyFilterMatches(opts.filters)
  const expected = new Map<string, Expected>()
  const kept: Kept[] = []
  let take: FeedTake | null = null
  let cap = CAP_BEFORE_ATTACH
  let onCap = (): void => undefined
  let outstanding = 0
  let holding = false

  // Clients' messages authorized while `cap` were being admitted, waiting to be published.
  const waiting = new Fifo<() => void>()
  const run = (k: Kept): void => {
    const t = take as FeedTake
    t(k.message, () => {
      outstanding--
      k.expected?.admitted()
      k.release?.()
      k.after?.()
      // All of them: one released and then not delivered (its topic dropped from the filters
      // meanwhile) would otherwise leave the rest waiting for a hand-over that never comes.
      if (outstanding < cap && !holding) while (waiting.length > 0) waiting.shift()!()
    })
  }
  // The hub's own sessions (main, board availability, board commands) are never held.
  const hubOwn = (id: string): boolean =>
    opts.hubClientId !== null && (id === opts.hubClientId || id.startsWith(`${opts.hubClientId}-`))

  // Aedes names the publishing client on the message it emits (aedes.js `emitPacket`).
  // An answer given at once is given in a microtask: mqemitter starts the next queued message
  // from inside the callback, and a queue of thousands answered synchronously overflows the stack.
  const deliver = (packet: AedesPublishPacket & { clientId?: string }, callback: () => void): void => {
    if (!wants(packet.topic)) return queueMicrotask(callback)
    const key = keyOf(packet)
    const e = expected.get(key)
    if (e) expected.delete(key)
    const message: FedMessage = {
      topic: packet.topic,
      payload: packet.payload as Buffer,
      qos: packet.qos,
      once: e ? `from ${e.clientId} ${e.messageId}` : null,
    }
    outstanding++
    // A client's QoS 1 message waits at its PUBACK, and at the cap before it is published
    // (`whenRoom`). The hub's own messages wait here, once the router is attached (before, the hub
    // would be waiting for itself): an `mqtt_publish` step on a trigger topic is done once the run
    // it starts is admitted, as its PUBACK on an external broker would say.
    const own = packet.clientId === undefined || packet.clientId === opts.hubClientId
    const full = outstanding > cap && own
    if (full) onCap()
    const waits = own ? take !== null && (packet.qos > 0 || full) : packet.qos === 2
    const k: Kept = { message, release: waits ? callback : null, expected: e }
    if (take) run(k)
    else kept.push(k)
    if (!waits) queueMicrotask(callback)
  }
  aedes.subscribe('#', deliver, () => undefined)

  return {
    setFilters(next) {
      wants = anyFilterMatches(next)
    },
    wants: (topic) => wants(topic),
    attach(t, o) {
      take = t
      cap = o.cap
      onCap = o.onCap
      for (const k of kept.splice(0)) run(k)
    },
    detach() {
      take = null
    },
    kept: () => kept.length,
    waiting: () => waiting.length,
    hold(on) {
      holding = on
      if (!on && outstanding < cap) while (waiting.length > 0 && !holding) waiting.shift()!()
    },
    keepFirst(messages) {
      let left = messages.length
      if (left === 0) return Promise.resolve()
      return new Promise<void>((resolve) => {
        const first: Kept[] = messages.map((message) => ({
          message,
          release: null,
          expected: undefined,
          after: () => {
            if (--left === 0) resolve()
          },
        }))
        outstanding += first.length
        if (take) for (const k of first) run(k)
        else kept.unshift(...first)
      })
    },
    ackHooks: {
      alsoAwait(client, packet) {
        // The hub's own sessions are not withheld (see the top of this file).
        if (!wants(packet.topic) || client.id === opts.hubClientId || packet.messageId === undefined)
          return null
        return new Promise<void>((resolve) => {
          expected.set(keyOf(packet), {
            messageId: packet.messageId as number,
            clientId: client.id,
            admitted: resolve,
          })
        })
      },
      whenRoom(client, packet, go) {
        if (holding && !hubOwn(client.id) && (packet.retain || wants(packet.topic))) return waiting.push(go)
        if (outstanding < cap || client.id === opts.hubClientId || !wants(packet.topic)) return go()
        onCap()
        waiting.push(go)
      },
      published(key) {
        // Published without reaching the feed (its filters changed meanwhile): nothing to wait for.
        const e = expected.get(key)
        if (e) {
          expected.delete(key)
          e.admitted()
        }
      },
    },
  }
}
