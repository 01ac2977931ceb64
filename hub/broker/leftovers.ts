// Events an older hub's session still had queued. Before the trigger feed (trigger-feed.ts), the
// hub's router took its events through a persistent MQTT session (clean: false) on the embedded
// broker, and a hub stopped (or killed) with events in flight left them queued for that session.
// They go to the triggers first, each under a once-only key that matches the older router's own
// (`mqtt <client> <packet id>`, for one it may have admitted before it died) or names the message
// for good (`queued <broker id>:<counter>`, for one never sent). The queue is cleared only once
// every one is admitted (`clearQueue`), so a kill before then finds them again at the next start.
// Until then it reads as empty to the hub's session (`withholdQueue`): for it, now clean, Aedes
// would give each queued packet a new packet id, and the once-only keys above must read the same
// at the next start.
import { Readable } from 'node:stream'
import type { Aedes } from 'aedes'
import type { FedMessage } from './trigger-feed.ts'

interface StoredPacket {
  topic: string
  payload: Buffer | string
  qos: number
  messageId?: number
  brokerId?: string
  brokerCounter?: number
}

interface Queues {
  outgoingStream(client: { id: string }): AsyncIterable<StoredPacket>
}

interface Clearing extends Queues {
  outgoingUpdate(client: { id: string }, packet: StoredPacket): Promise<void>
  outgoingClearMessageId(
    client: { id: string; clean: boolean },
    packet: { messageId: number },
  ): Promise<unknown>
}

// A stored packet's id reads back from LevelDB as null when it had none (msgpack has no undefined).
const idOf = (p: StoredPacket): number | null => (typeof p.messageId === 'number' ? p.messageId : null)

/** What is queued for `clientId`, as messages for the feed. */
export async function queuedEvents(persistence: Queues, clientId: string): Promise<FedMessage[]> {
  const out: FedMessage[] = []
  for await (const p of persistence.outgoingStream({ id: clientId })) {
    out.push({
      topic: p.topic,
      payload: Buffer.isBuffer(p.payload) ? p.payload : Buffer.from(p.payload),
      qos: p.qos,
      once: idOf(p) !== null ? `mqtt ${clientId} ${idOf(p)}` : `queued ${p.brokerId}:${p.brokerCounter}`,
    })
  }
  return out
}

/** `clientId`'s queue reads as empty until `until` settles, so nothing clears it before then. */
export function withholdQueue(aedes: Aedes, clientId: string, until: Promise<void>): void {
  const broker = aedes as unknown as { persistence: Queues & object }
  const inner = broker.persistence
  const own = inner.outgoingStream.bind(inner)
  broker.persistence = new Proxy(inner, {
    get: (target, key, receiver) =>
      key === 'outgoingStream'
        ? (client: { id: string }) =>
            client.id === clientId
              ? Readable.from(
                  (async function* () {
                    await until
                    yield* own(client)
                  })(),
                )
              : own(client)
        : Reflect.get(target, key, receiver),
  })
}

/**
 * Empties `clientId`'s queue. aedes-persistence-level finds a queued packet to delete by its packet
 * id, so one never sent is first given an id no other queued packet holds. The session is clean
 * now: it has no other queued packet whose id could collide.
 */
export async function clearQueue(persistence: Clearing, clientId: string): Promise<void> {
  const stored: StoredPacket[] = []
  for await (const p of persistence.outgoingStream({ id: clientId })) stored.push(p)
  const used = new Set(stored.map(idOf).filter((id) => id !== null))
  let next = 1
  for (const p of stored) {
    let id = idOf(p)
    if (id === null) {
      while (used.has(next)) next++
      id = next++
      await persistence.outgoingUpdate({ id: clientId }, { ...p, messageId: id })
    }
    // As a persistent session: clean-acks.ts answers a clean one's clear without looking.
    await persistence.outgoingClearMessageId({ id: clientId, clean: false }, { messageId: id })
  }
}
