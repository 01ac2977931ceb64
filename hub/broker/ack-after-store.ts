// A QoS 1 PUBACK only once the message is stored.
//
// With the PUBACK the broker takes ownership of the message (MQTT 3.1.1 §4.3.2, MQTT 5 §4.3.2):
// the publisher forgets it. Aedes (lib/handlers/publish.js, `enqueuePublish`) writes the PUBACK
// first and only then starts the publish, whose first write is the offline queue of every
// persistent subscription (aedes.js `enqueueOffline`). A kill between the two loses a message
// the publisher was told is safe: the hub's own mqtt_publish step, acknowledged, recorded its run
// as completed, and the answer was never stored (an event acknowledged to a board the same way).
// QoS 2 is already safe: Aedes stores the message before its PUBREC.
//
// Aedes asks `authorizePublish` before it acknowledges, with the very packet object it then
// publishes. So the publish is started there, once authorized, and the answer (hence the PUBACK)
// waits until the message is in the queue of every persistent subscription (the persistence's
// `outgoingEnqueueCombi`, after the retained store): from there a restart sends it again. The
// hand-over to the online subscribers goes on meanwhile, and Aedes' own publish of the packet
// afterwards only waits for that publish to finish, so the connection's flow control (Aedes
// reads its next packets once the current ones are done; read-slices.ts reads one slice ahead)
// is what it was.
import type { Aedes, Client, PublishPacket } from 'aedes'

type Done = (error?: Error | null) => void
type Publish = (packet: PublishPacket, client: Client | null, done: Done) => void
type Authorize = (client: Client | null, packet: PublishPacket, done: Done) => void
type Enqueue = (subs: unknown[], packet: object) => Promise<unknown>

interface Counted {
  brokerId?: string
  brokerCounter?: number
}

/** A publish started by the authorization step, until Aedes' own publish of the packet. */
interface Started {
  finished: boolean
  error: Error | null
  onFinish: Done | null
}

/** A message's name inside the broker: the same on the packet a client sent and on its copies. */
export const keyOf = (p: Counted): string => `${p.brokerId}:${p.brokerCounter}`

/** What else a PUBACK waits for (the hub's in-process trigger feed, trigger-feed.ts). */
export interface AckHooks {
  /**
   * Called once the message is authorized and counted (`keyOf` names it); a promise returned
   * holds its PUBACK until it settles, as well as until the message is stored. Never rejects.
   */
  alsoAwait(client: Client, packet: PublishPacket & Counted): Promise<void> | null
  /** Aedes has finished publishing the message, whatever became of it. */
  published(key: string): void
  /**
   * Called once a client's message is authorized, before it is published (any QoS): `go` may be
   * held, and Aedes then reads no more from that client until it runs.
   */
  whenRoom(client: Client, packet: PublishPacket, go: () => void): void
}

/** Makes `aedes` store each QoS 1 message a client publishes before it acknowledges it. */
export function ackAfterStore(aedes: Aedes, hooks?: AckHooks): void {
  const broker = aedes as unknown as {
    id: string
    counter: number
    persistence: Record<string, unknown>
    publish: Publish
    authorizePublish: Authorize
  }
  const publish: Publish = broker.publish.bind(aedes)
  const authorize: Authorize = broker.authorizePublish.bind(aedes)
  const started = new WeakMap<object, Started>()
  // Messages whose PUBACK waits for their queue write, by (broker id, counter).
  const queued = new Map<string, () => void>()

  const persistence = broker.persistence
  const enqueue = (persistence.outgoingEnqueueCombi as Enqueue).bind(persistence)
  const enqueueThenAck: Enqueue = (subs, packet) => {
    const written = enqueue(subs, packet)
    const key = keyOf(packet as Counted)
    const ack = queued.get(key)
    if (ack) {
      queued.delete(key)
      written.then(ack, () => undefined)
    }
    return written
  }
  broker.persistence = new Proxy(persistence, {
    get: (target, key, receiver) =>
      key === 'outgoingEnqueueCombi' ? enqueueThenAck : Reflect.get(target, key, receiver),
  })

  broker.publish = ((packet: PublishPacket, client: Client | null | Done, done?: Done) => {
    const s = started.get(packet)
    if (!s) return (publish as (...args: unknown[]) => void)(packet, client, done)
    started.delete(packet)
    const finish = (typeof client === 'function' ? client : done) ?? (() => undefined)
    if (s.finished) finish(s.error)
    else s.onFinish = finish
  }) as Publish

  broker.authorizePublish = (client, packet, done) => {
    authorize(client, packet, (err) => {
      if (err) return done(err)
      // MQTT 3.1.1 §3.3.1.1 [MQTT-3.3.1-3]: DUP says the publisher is sending this packet again;
      // to a subscriber it is a first delivery. Aedes passes the flag on, and a subscriber that
      // drops DUP copies would drop a message whose first send never arrived.
      packet.dup = false
      // A null client: a will of a session gone before a restart, published by Aedes itself.
      if (client === null) return done(null)
      if (hooks) hooks.whenRoom(client, packet, () => start(client, packet, done))
      else start(client, packet, done)
    })
  }

  const start = (client: Client, packet: PublishPacket, done: Done): void => {
    if (packet.qos !== 1) return done(null)
    // The counter Aedes would give the message (aedes-packet), given now so that the queue
    // write of this very message can be recognised.
    const counted = packet as PublishPacket & Counted
    counted.brokerId = broker.id
    counted.brokerCounter = ++broker.counter
    const key = keyOf(counted)
    let answered = false
    const answer = (e: Error | null): void => {
      if (answered) return
      answered = true
      queued.delete(key)
      done(e)
    }
    // Stored, and (with a hook that asks) admitted: then the PUBACK.
    const also = hooks?.alsoAwait(client, counted) ?? null
    let stored = false
    let admitted = also === null
    const storedNow = (): void => {
      stored = true
      if (admitted) answer(null)
    }
    also?.then(() => {
      admitted = true
      if (stored) answer(null)
    })
    const s: Started = { finished: false, error: null, onFinish: null }
    started.set(packet, s)
    queued.set(key, storedNow)
    publish(packet, client, (publishErr) => {
      s.finished = true
      s.error = publishErr ?? null
      s.onFinish?.(s.error)
      hooks?.published(key)
      // Not stored: no PUBACK. Aedes closes the connection and the publisher sends it again.
      if (s.error) answer(s.error)
      else storedNow()
    })
  }
}
