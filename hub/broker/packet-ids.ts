// Packet ids for a persistent session: a new delivery never takes the id of a stored one.
//
// A QoS 1 message queued for a session keeps the packet id it was first sent with, and is sent
// again with it when the session reconnects (MQTT 3.1.1 §4.4 [MQTT-4.4.0-1]). Aedes numbers a
// connection's new deliveries from a random start (lib/client.js `_nextId`) without looking at
// those stored ids, so after a reconnect (every hub restart) a live message can get the id of a
// stored one: two messages in flight under one id, which MQTT forbids (§2.3.1 [MQTT-2.3.1-2]).
// aedes-persistence-level finds a packet by its id to clear it at PUBACK (`outgoingClearMessageId`)
// and keeps one packet per id, the last one sent: the subscriber's PUBACK for the replayed message
// deletes the live one from the queue, delivered or not. If the connection then dies before the
// subscriber has it (a kill, a dropped link), that message is gone.
//
// So before a persistent session's connection starts (`preConnect`, ahead of its subscriptions
// and its queue), the ids its queue holds are read, and the connection's counter steps over them.
import type { Client, ConnectPacket } from 'aedes'

interface QueuedPacket {
  messageId?: number
}

interface OutgoingStream {
  outgoingStream(client: { id: string }): AsyncIterable<unknown>
}

const MAX_ID = 65535

/** The packet ids held by the messages queued for `clientId`. */
export async function storedPacketIds(persistence: OutgoingStream, clientId: string): Promise<Set<number>> {
  const ids = new Set<number>()
  for await (const packet of persistence.outgoingStream({ id: clientId })) {
    const id = (packet as QueuedPacket).messageId
    if (typeof id === 'number' && id > 0) ids.add(id)
  }
  return ids
}

/**
 * Makes the connection's id counter (Aedes reads `_nextId` for each new delivery, then steps it)
 * pass over `taken`. The counter is Aedes' own; only its reads change.
 */
export function skipPacketIds(client: Client, taken: ReadonlySet<number>): void {
  const c = client as unknown as { _nextId: number }
  let next = c._nextId
  // Every id taken: nothing to step to; Aedes' own behaviour.
  const full = taken.size >= MAX_ID
  Object.defineProperty(c, '_nextId', {
    configurable: true,
    enumerable: true,
    get(): number {
      if (!full) while (taken.has(next)) next = next >= MAX_ID ? 1 : next + 1
      return next
    },
    set(v: number) {
      next = v
    },
  })
}

/** Aedes' `preConnect`: for a persistent session, reads its stored ids and installs the skip. */
export function reserveStoredPacketIds(
  client: Client,
  packet: ConnectPacket,
  callback: (error: Error | null, success: boolean) => void,
): void {
  if (packet.clean !== false || !packet.clientId) return callback(null, true)
  const persistence = (client as unknown as { broker: { persistence: OutgoingStream } }).broker.persistence
  storedPacketIds(persistence, packet.clientId).then(
    (taken) => {
      if (taken.size > 0) skipPacketIds(client, taken)
      callback(null, true)
    },
    (err: unknown) => callback(err instanceof Error ? err : new Error(String(err)), false),
  )
}
