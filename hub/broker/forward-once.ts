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
}

export function forwardOnce(window = FORWARD_WINDOW): ForwardOnce {
  // Per connection object, so a reconnected session starts empty and gets its stored packets replayed.
  const sent = new WeakMap<Client, Set<string>>()
  return {
    preConnect(client, _packet, callback) {
      ;(client as unknown as { duplicates: Record<string, number> }).duplicates = neverSeen
      callback(null, true)
    },
    authorizeForward(client, packet) {
      const { brokerId, brokerCounter } = packet as AedesPublishPacket & {
        brokerId?: string
        brokerCounter?: number
      }
      if (!brokerId) return packet
      const key = `${brokerId}:${brokerCounter}`
      let keys = sent.get(client)
      if (!keys) sent.set(client, (keys = new Set()))
      if (keys.has(key)) return null
      keys.add(key)
      if (keys.size > window) keys.delete(keys.values().next().value as string)
      return packet
    },
  }
}
