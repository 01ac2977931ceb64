// TCP_NODELAY on every MQTT connection the hub makes or takes. Neither mqtt.js nor Aedes sets
// it, so a small packet written while an earlier one is unacknowledged waits for the peer's
// delayed ACK (Nagle's algorithm against delayed ACKs: about 40 ms on Linux). An isolated event
// (PUBLISH in, PUBACK out, the run's PUBLISH out) then answers in ~45 ms instead of ~1 ms.
// MQTT packets are written whole, so there is nothing for Nagle to coalesce.
import type { MqttClient } from 'mqtt'

interface MaybeSocket {
  setNoDelay?: (noDelay?: boolean) => unknown
}

/** Sets TCP_NODELAY on a stream when it is a TCP or TLS socket (a WebSocket stream has none). */
export function noDelayStream(stream: unknown): void {
  const s = stream as MaybeSocket | null | undefined
  if (typeof s?.setNoDelay === 'function') s.setNoDelay(true)
}

/**
 * Sets TCP_NODELAY on an mqtt.js client's socket now and after every reconnect (mqtt.js opens a
 * new socket each time, and emits `connect` once its CONNACK is in: before any PUBLISH it sends).
 * Returns the client, so it wraps `await mqtt.connectAsync(...)`.
 */
export function withNoDelay<C extends MqttClient>(client: C): C {
  noDelayStream(client.stream)
  client.on('connect', () => noDelayStream(client.stream))
  return client
}
