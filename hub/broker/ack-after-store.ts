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
// publishes. So the publish is run there, once authorized, and the PUBACK waits for it: stored
// for every persistent subscription and handed to the online ones. Aedes' own publish of that
// packet afterwards is then a no-op. The publisher's connection was already held for the whole
// publish (Aedes reads the next packets only once the current ones are done), so this costs the
// PUBACK the time of the writes and takes nothing from throughput.
import type { Aedes, Client, PublishPacket } from 'aedes'

type Done = (error?: Error | null) => void
type Publish = (packet: PublishPacket, client: Client | null, done: Done) => void
type Authorize = (client: Client | null, packet: PublishPacket, done: Done) => void

/** Makes `aedes` store each QoS 1 message a client publishes before it acknowledges it. */
export function ackAfterStore(aedes: Aedes): void {
  const broker = aedes as unknown as { publish: Publish; authorizePublish: Authorize }
  const publish: Publish = broker.publish.bind(aedes)
  const authorize: Authorize = broker.authorizePublish.bind(aedes)
  // Packets already published by the authorization step: Aedes' second publish of each is skipped.
  const published = new WeakSet<object>()

  broker.publish = ((packet: PublishPacket, client: Client | null | Done, done?: Done) => {
    if (published.delete(packet)) return (typeof client === 'function' ? client : done)?.(null)
    return (publish as (...args: unknown[]) => void)(packet, client, done)
  }) as Publish

  broker.authorizePublish = (client, packet, done) => {
    authorize(client, packet, (err) => {
      if (err) return done(err)
      // MQTT 3.1.1 §3.3.1.1 [MQTT-3.3.1-3]: DUP says the publisher is sending this packet again;
      // to a subscriber it is a first delivery. Aedes passes the flag on, and a subscriber that
      // drops DUP copies would drop a message whose first send never arrived.
      packet.dup = false
      // A null client: a will of a session gone before a restart, published by Aedes itself.
      if (packet.qos !== 1 || client === null) return done(null)
      publish(packet, client, (publishErr) => {
        // Not stored: no PUBACK. Aedes closes the connection and the publisher sends it again.
        if (publishErr) return done(publishErr)
        published.add(packet)
        done(null)
      })
    })
  }
}
