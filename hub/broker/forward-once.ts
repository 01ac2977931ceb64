// Exactly-once forwarding per connection, replacing Aedes' own duplicate check.
//
// Aedes (lib/client.js `dedupe`) forwards a packet to a client only when its broker counter is
// above the highest it has forwarded to that client. The counter is taken when a publish arrives,
// but a QoS 1 publish reaches subscribers only after asynchronous persistence writes (the offline
// queue), so under load deliveries overtake each other and the overtaken one is dropped without a
// trace: a lost QoS 1 message (moscajs/aedes#955, #994; reproduced here with 8 publishers and a
// persistent subscriber: about 9% lost). The high-water mark is replaced by an exact match on
// (broker id, counter) within a bounded window, which still drops what the check exists for (the
// same stored packet replayed to a reconnected session while it is also delivered live) and no
// longer drops anything else.
//
// The copy to drop is decided when the queue is read, not when the copy is about to be written.
// Aedes sends a reconnected session its queue (handlers/connect.js `emptyQueue`) by first
// recording each packet as sent under the id it goes out with (`outgoingUpdate`) and only then
// asking `authorizeForward`; a refused one is cleared from the queue (`outgoingClearMessageId`),
// as if acknowledged. For a message published while the session connects (queued, and forwarded
// live before the queue got to it) that cleared the queue entry of the live copy, which the
// subscriber had not acknowledged: lost if the connection then died. So `replayOnce` takes a
// packet already forwarded out of the queue before Aedes sees it, and a packet the queue gets to
// first is claimed for it, so the live copy after it is the one dropped (a live copy is refused
// before anything is recorded, and clearing it clears nothing: it has no packet id yet).
import { Readable } from 'node:stream'
import type { AedesPublishPacket, Client, ConnectPacket } from 'aedes'

/** How many recent deliveries each connection remembers. A replay overlaps live traffic only
 *  briefly after a reconnect, so this is generous. */
export const FORWARD_WINDOW = 16_384

// Every broker id reads as "nothing forwarded yet", and writes are ignored: Aedes' check always passes.
const neverSeen: Record<string, number> = new Proxy(Object.create(null) as Record<string, number>, {
  get: () => 0,
  set: () => true,
})

export interface ForwardOnce {
  preConnect(
    client: Client,
    packet: ConnectPacket,
    callback: (error: Error | null, success: boolean) => void,
  ): void
  authorizeForward(client: Client, packet: AedesPublishPacket): AedesPublishPacket | null
  /**
   * For a packet read from a reconnecting session's queue: false when it was already forwarded
   * live on this connection (then it must not be sent from the queue at all), else true, and the
   * copy from the queue is the one forwarded (a live copy after it is dropped).
   */
  claimReplay(client: Client, packet: AedesPublishPacket): boolean
}

/**
 * A delivery's name: its counter alone when this broker counted it (a number costs a set nothing
 * beyond its slot, where a string of broker id and counter cost about 130 bytes, 2 MB for a busy
 * subscriber's window), else both (a message stored by an earlier run of the broker).
 */
type Key = number | string

export function forwardOnce(window = FORWARD_WINDOW): ForwardOnce {
  // Per connection object, so a reconnected session starts empty and gets its stored packets replayed.
  const sent = new WeakMap<Client, Set<Key>>()
  // Queued packets claimed for the replay and not yet past authorizeForward.
  const claimed = new WeakMap<Client, Set<Key>>()
  const keyOf = (client: Client, packet: AedesPublishPacket): Key | null => {
    const { brokerId, brokerCounter } = packet as AedesPublishPacket & {
      brokerId?: string
      brokerCounter?: number
    }
    if (!brokerId) return null
    const own = (client as { broker?: { id?: string } }).broker?.id
    return brokerId === own && typeof brokerCounter === 'number'
      ? brokerCounter
      : `${brokerId}:${brokerCounter}`
  }
  const remember = (client: Client, key: Key): void => {
    let keys = sent.get(client)
    if (!keys) sent.set(client, (keys = new Set()))
    keys.add(key)
    if (keys.size > window) keys.delete(keys.values().next().value as Key)
  }
  return {
    preConnect(client, _packet, callback) {
      ;(client as unknown as { duplicates: Record<string, number> }).duplicates = neverSeen
      callback(null, true)
    },
    authorizeForward(client, packet) {
      const key = keyOf(client, packet)
      if (key === null) return packet
      if (claimed.get(client)?.delete(key)) return packet
      if (sent.get(client)?.has(key)) return null
      remember(client, key)
      return packet
    },
    claimReplay(client, packet) {
      const key = keyOf(client, packet)
      if (key === null) return true
      if (sent.get(client)?.has(key)) return false
      remember(client, key)
      let keys = claimed.get(client)
      if (!keys) claimed.set(client, (keys = new Set()))
      keys.add(key)
      return true
    },
  }
}

interface QueueSource {
  outgoingStream(client: Client): Readable
}

/**
 * Wraps an Aedes persistence so a session's queue, as Aedes reads it to send it on reconnect,
 * leaves out what `once` has already forwarded on that connection (see the note at the top).
 */
export function replayOnce<P extends object>(persistence: P, once: ForwardOnce): P {
  const source = persistence as unknown as QueueSource
  const outgoingStream = (client: Client): Readable => {
    const stream = source.outgoingStream(client)
    // A lookup of the queue by id alone (packet-ids.ts) is not a connection: nothing to leave out.
    if (!(client as { broker?: unknown }).broker) return stream
    return Readable.from(
      (async function* () {
        for await (const packet of stream)
          if (once.claimReplay(client, packet as AedesPublishPacket)) yield packet
      })(),
    )
  }
  return new Proxy(persistence, {
    get(target, key, receiver) {
      return key === 'outgoingStream' ? outgoingStream : Reflect.get(target, key, receiver)
    },
  })
}
