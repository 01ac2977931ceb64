// Delivery in publish order (MQTT 5 §4.6, MQTT 3.1.1 §4.6: messages one client publishes on one
// topic reach each subscriber in the order they were published, at QoS 1 and 2).
//
// Aedes handles every packet of one socket read concurrently (lib/client.js `enqueue`), and
// between a publish arriving and reaching subscribers it awaits the persistence: the subscriber
// lookup and the offline-queue write (aedes.js `enqueueOffline`), the QoS 2 receive-store
// (handlers/publish.js), and the outgoing update of each persistent subscriber before the write
// (lib/client.js `deliverQoS`). aedes-persistence-level issues each of those as its own LevelDB
// job, and LevelDB jobs run on libuv's thread pool, so they finish in any order: a later packet's
// write can finish first and its continuation then emits (or writes) it ahead of an earlier one.
// Every path above calls the persistence in arrival order, so answering the calls in the order
// they were made is enough to restore the order of everything that follows them. The jobs still
// run concurrently; only their answers are released in sequence.

/** The persistence calls on the path from a PUBLISH arriving to it being written to a subscriber. */
export const ORDERED_CALLS = [
  'storeRetained',
  'subscriptionsByTopic',
  'outgoingEnqueue',
  'outgoingEnqueueCombi',
  'outgoingUpdate',
  'incomingStorePacket',
  'incomingGetPacket',
  'incomingDelPacket',
] as const

const noop = (): void => {}

/**
 * A sequencer per key: `settle(key, p)` settles like `p`, but never before everything passed
 * earlier under the same key has settled. Keys are topics: MQTT's order is per topic (MQTT 5
 * §4.6 "Ordered Topic"), and a per-topic sequence keeps one slow topic from holding up the rest.
 */
export function inOrder(): <T>(key: string, p: PromiseLike<T>) => Promise<T> {
  const tails = new Map<string, Promise<void>>()
  return <T>(key: string, p: PromiseLike<T>): Promise<T> => {
    const result = Promise.resolve(p)
    // Marked handled now: a rejection that comes before its turn is still the caller's to see
    // (through `settled`), not an unhandled rejection in the meantime.
    result.catch(noop)
    const before = tails.get(key)
    const settled = before ? before.then(() => result) : result
    const tail: Promise<void> = settled.then(noop, noop).then(() => {
      // The last in line forgets the key, so the map holds only topics with calls in flight.
      if (tails.get(key) === tail) tails.delete(key)
    })
    tails.set(key, tail)
    return settled
  }
}

function isThenable(v: unknown): v is PromiseLike<unknown> {
  return typeof (v as { then?: unknown } | null)?.then === 'function'
}

/**
 * The sequence a persistence call belongs to. Publish-path calls: the packet's topic. Delivery
 * calls (the outgoing update before writing to one subscriber): that subscriber and the topic,
 * so one subscriber's deliveries never wait on the next publishes or on another subscriber.
 * Calls about a packet with no topic (the PUBREL a subscriber's PUBREC asks for, an inbound
 * PUBREL's lookup and delete): that client, because PUBREL must go out in the order the PUBRECs
 * came in (MQTT 3.1.1 §4.6), and a QoS 2 subscriber such as mqtt.js hands a message on only at
 * its PUBREL, so PUBRELs out of order are messages out of order.
 */
function sequenceOf(name: string, args: unknown[]): string {
  if (name === 'subscriptionsByTopic') return `t:${String(args[0])}`
  const packet = (name === 'storeRetained' ? args[0] : args[1]) as { topic?: unknown } | undefined
  const client = String((args[0] as { id?: unknown } | undefined)?.id)
  if (typeof packet?.topic !== 'string') return `c:${client}`
  if (name === 'outgoingUpdate') return `d:${client}\u0000${packet.topic}`
  return `t:${packet.topic}`
}

/**
 * Wraps an Aedes persistence so the calls in ORDERED_CALLS answer, topic by topic, in the order
 * they were made. Every other member (streams, setup, the callback forms) is the persistence's own.
 */
export function orderedPersistence<P extends object>(persistence: P): P {
  const settle = inOrder()
  const wrapped = new Map<PropertyKey, (...args: unknown[]) => unknown>()
  for (const name of ORDERED_CALLS) {
    const fn = (persistence as Record<string, unknown>)[name]
    if (typeof fn !== 'function') continue
    wrapped.set(name, (...args: unknown[]) => {
      const result = (fn as (...a: unknown[]) => unknown).apply(persistence, args)
      // The callback form (last argument a function) answers through the callback: leave it.
      if (typeof args[args.length - 1] === 'function' || !isThenable(result)) return result
      return settle(sequenceOf(name, args), result)
    })
  }
  return new Proxy(persistence, {
    get(target, key, receiver) {
      return wrapped.get(key) ?? Reflect.get(target, key, receiver)
    },
  })
}
