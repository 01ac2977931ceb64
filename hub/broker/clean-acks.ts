// A PUBACK from a clean-session client clears nothing: Aedes stores a QoS 1 delivery only for a
// persistent session (lib/client.js, deliverQoS: `that.clean || packet.retain` writes it
// straight out), yet asks its persistence to clear every PUBACK's packet id, and
// aedes-persistence-level reads LevelDB for it and finds nothing. That read was 6.5% of the
// embedded broker's main thread in a peer burst (bench/README.md): every output the bench's
// subscriber acknowledged. Here such a PUBACK is answered "nothing stored" without the read.
//
// A client that reconnects with a clean session after a persistent one: MQTT discards the old
// session (MQTT-3.1.2-6), and its clean connection's packet ids are unrelated to the old queue's,
// so a PUBACK of it had no business clearing an old entry anyway.
interface WithClean {
  clean?: boolean
}

export function cleanSessionAcks<P extends object>(persistence: P): P {
  const clear = (persistence as { outgoingClearMessageId?: (c: WithClean, p: unknown) => Promise<unknown> })
    .outgoingClearMessageId
  if (typeof clear !== 'function') return persistence
  const wrapped = (client: WithClean, packet: unknown): Promise<unknown> =>
    client.clean === true ? Promise.resolve(undefined) : clear.call(persistence, client, packet)
  return new Proxy(persistence, {
    get(target, key, receiver) {
      return key === 'outgoingClearMessageId' ? wrapped : Reflect.get(target, key, receiver)
    },
  })
}
