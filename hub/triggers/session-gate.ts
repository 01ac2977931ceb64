// The hub's persistent MQTT session gets the events the broker kept for it (QoS 1, clean: false)
// the moment it connects: before the trigger router is listening. mqtt.js acknowledges a message
// nobody is listening to as soon as it is emitted, so those events were acknowledged and lost
// (the ones waiting for the hub across every restart). The gate, in place before the first
// packet, keeps each message and withholds its PUBACK (mqtt.js goes on reading, so the hub's own
// publishes meanwhile are acknowledged as usual) until the router takes over
// (`takeHeldMessages`): then each PUBACK waits for its admission like any other.
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt'

type Held = { topic: string; payload: Buffer; packet: object }
type SendPacket = (packet: { cmd?: string }, cb?: (err?: Error) => void, ...rest: unknown[]) => void

interface Gate {
  messages: Held[]
  pubacks: object[]
  onMessage: (topic: string, payload: Buffer, packet: object) => void
}

const gates = new WeakMap<MqttClient, Gate>()

/** Holds incoming messages on `client` until `takeHeldMessages` (call before it connects). */
export function holdMessages(client: MqttClient): void {
  const gate: Gate = {
    messages: [],
    pubacks: [],
    onMessage: (topic, payload, packet) => gate.messages.push({ topic, payload, packet }),
  }
  client.on('message', gate.onMessage)
  const c = client as unknown as { _sendPacket: SendPacket }
  c._sendPacket = function (this: unknown, packet, cb, ...rest) {
    if (packet.cmd !== 'puback' || !gates.has(client))
      return Object.getPrototypeOf(client)._sendPacket.call(this, packet, cb, ...rest)
    gate.pubacks.push(packet)
    cb?.()
  }
  gates.set(client, gate)
}

/** `mqtt.connectAsync` with the gate in place before the first packet can arrive. */
export function connectHeld(opts: IClientOptions): Promise<MqttClient> {
  const client = mqtt.connect(opts)
  holdMessages(client)
  return new Promise((resolve, reject) => {
    const done = (): void => {
      client.off('connect', onConnect)
      client.off('error', onError)
    }
    const onConnect = (): void => {
      done()
      resolve(client)
    }
    const onError = (err: Error): void => {
      done()
      client.end(true)
      reject(err)
    }
    client.on('connect', onConnect)
    client.on('error', onError)
  })
}

/**
 * Ends the gate: mqtt.js gets its own `_sendPacket` back, `install` puts the taker's hooks in,
 * `onMessage` gets the messages held so far (in order), and then their PUBACKs are handed to
 * whatever `install` put in place (which sends each once its message is admitted).
 */
export function takeHeldMessages(
  client: MqttClient,
  onMessage: (topic: string, payload: Buffer, packet: object) => void,
  install: () => void,
): void {
  const gate = gates.get(client)
  if (!gate) return install()
  gates.delete(client)
  client.off('message', gate.onMessage)
  delete (client as unknown as { _sendPacket?: unknown })._sendPacket
  install()
  for (const m of gate.messages) onMessage(m.topic, m.payload, m.packet)
  const send = (client as unknown as { _sendPacket: SendPacket })._sendPacket
  for (const p of gate.pubacks) send.call(client, p)
}
