// Retained messages the embedded broker keeps in memory only (hub/README.md, "State on MQTT and
// Home Assistant"): the hub's own summaries (`svc/hub/state`, `svc/approvals/pending`), which the
// hub publishes again each time it starts and rewrites up to once a second while runs come. The
// embedded broker lives and dies with the hub, so a stored copy could only ever be read in the
// moments after the next start, before the hub publishes its new state: a copy from a hub that
// has stopped, wrong by then. Stored, each rewrite cost the SD card about 900 bytes of the
// broker's LevelDB log per second of activity (bench/README.md, "endurance").
// Every other retained message (a board's availability, a client's own) is stored as before.
import { Readable } from 'node:stream'
import { topicMatches } from '../../mqtt/topics.ts'

interface RetainedPacket {
  topic: string
  payload: Buffer | string
}

interface RetainedStore {
  storeRetained(packet: RetainedPacket): Promise<void>
  createRetainedStreamCombi(patterns: string[]): Readable
  createRetainedStream(pattern: string): Readable
}

const emptyPayload = (p: RetainedPacket): boolean => p.payload.length === 0

/**
 * Wraps an Aedes persistence: a retained message on a topic `isVolatile` accepts is kept in a
 * map, not written, and the retained streams a SUBSCRIBE reads give both. A copy an older hub
 * stored on such a topic is deleted from the store the first time the topic is retained here,
 * and never served meanwhile.
 */
export function volatileRetained<P extends object>(
  persistence: P,
  isVolatile: (topic: string) => boolean,
): P {
  const inner = persistence as unknown as RetainedStore
  const kept = new Map<string, RetainedPacket>()
  const cleared = new Set<string>()

  const storeRetained = async (packet: RetainedPacket): Promise<void> => {
    if (!isVolatile(packet.topic)) return inner.storeRetained(packet)
    if (emptyPayload(packet)) kept.delete(packet.topic)
    else kept.set(packet.topic, packet)
    if (cleared.has(packet.topic)) return
    cleared.add(packet.topic)
    await inner.storeRetained({ ...packet, payload: Buffer.alloc(0) })
  }

  const merged = (stored: Readable, patterns: readonly string[]): Readable =>
    Readable.from(
      (async function* () {
        for await (const p of stored as AsyncIterable<RetainedPacket>) if (!isVolatile(p.topic)) yield p
        for (const p of kept.values()) if (patterns.some((f) => topicMatches(f, p.topic))) yield p
      })(),
    )

  const members: Record<PropertyKey, unknown> = {
    storeRetained,
    createRetainedStreamCombi: (patterns: string[]) =>
      merged(inner.createRetainedStreamCombi(patterns), patterns),
    createRetainedStream: (pattern: string) => merged(inner.createRetainedStream(pattern), [pattern]),
  }
  return new Proxy(persistence, {
    get(target, key, receiver) {
      return key in members ? members[key] : Reflect.get(target, key, receiver)
    },
  })
}
