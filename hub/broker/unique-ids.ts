// A persistent session's packet identifiers kept unique among its unacknowledged messages.
//
// Aedes numbers a session's new deliveries from a counter (a random start in each process) and
// does not look at the identifiers of the stored messages it sends again when the session
// reconnects, which keep theirs (MQTT 3.1.1 §4.4). Two unacknowledged messages under one
// identifier are one too many: aedes-persistence-level maps identifier → message, so the second
// one's mapping replaces the first's, and the PUBACK of the first then clears the second from the
// session although its subscriber has not acknowledged it. A crash before it does loses it: a run
// of test/hub/event-crash.test.ts found ~130 acknowledged events with no run after a restart, and
// test/hub/broker-ids.test.ts makes it happen on purpose. Here a new delivery whose identifier is held by another
// unacknowledged message of the session gets the next free one instead; messages sent again keep
// their own.

/** The persistence calls this needs (aedes-persistence's promise forms). */
interface Persistence {
  outgoingUpdate(client: Client, packet: Packet): Promise<unknown>
  outgoingClearMessageId(client: Client, packet: Packet): Promise<unknown>
  outgoingStream(client: Client): AsyncIterable<Packet>
}

interface Client {
  id: string
  _nextId: number
}

interface Packet {
  cmd?: string
  messageId?: number
  brokerId?: string
  brokerCounter?: number
}

const MAX_ID = 65_535

const packetKey = (p: Packet): string => `${p.brokerId}:${p.brokerCounter}`

/** Wraps `persistence`; every other member is the persistence's own. */
export function uniqueMessageIds<P extends object>(persistence: P): P {
  const base = persistence as unknown as Persistence
  // Per session: the identifiers its unacknowledged messages hold, and whose (packetKey).
  const held = new Map<string, Promise<Map<number, string>>>()

  /** The session's identifiers: first those of its stored messages (read once per process). */
  const idsOf = (client: Client): Promise<Map<number, string>> => {
    let ids = held.get(client.id)
    if (!ids) {
      ids = (async () => {
        const m = new Map<number, string>()
        for await (const p of base.outgoingStream(client)) if (p.messageId) m.set(p.messageId, packetKey(p))
        return m
      })()
      held.set(client.id, ids)
      // A failed read is tried again next time rather than remembered.
      ids.catch(() => held.delete(client.id))
    }
    return ids
  }

  const outgoingUpdate = async (client: Client, packet: Packet, ...cb: unknown[]): Promise<unknown> => {
    // The callback form (Aedes uses the promise one) is passed on as it is.
    if (cb.length > 0)
      return (base.outgoingUpdate as (...a: unknown[]) => Promise<unknown>)(client, packet, ...cb)
    // PUBREL (QoS 2) keeps the identifier of its PUBLISH, which is already accounted for.
    if (packet.cmd === 'publish' && packet.messageId && packet.brokerId !== undefined) {
      const ids = await idsOf(client)
      const key = packetKey(packet)
      const holder = ids.get(packet.messageId)
      if (holder !== undefined && holder !== key) {
        let id = packet.messageId
        for (let n = 0; n < MAX_ID && ids.has(id); n++) id = id >= MAX_ID ? 1 : id + 1
        packet.messageId = id
        client._nextId = id >= MAX_ID ? 1 : id + 1
      }
      ids.set(packet.messageId, key)
    }
    return base.outgoingUpdate(client, packet)
  }

  const outgoingClearMessageId = async (
    client: Client,
    packet: Packet,
    ...cb: unknown[]
  ): Promise<unknown> => {
    if (cb.length > 0)
      return (base.outgoingClearMessageId as (...a: unknown[]) => Promise<unknown>)(client, packet, ...cb)
    const cleared = await base.outgoingClearMessageId(client, packet)
    const ids = held.get(client.id)
    if (ids && packet.messageId) (await ids).delete(packet.messageId)
    return cleared
  }

  const own: Record<string, unknown> = { outgoingUpdate, outgoingClearMessageId }
  return new Proxy(persistence, {
    get(target, key, receiver) {
      if (typeof key === 'string' && Object.hasOwn(own, key)) return own[key]
      return Reflect.get(target, key, receiver)
    },
  })
}
