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
  const tune = (): void => {
    noDelayStream(client.stream)
    roomyWrites(client.stream)
  }
  tune()
  client.on('connect', tune)
  return client
}

/** Write buffer past which a socket reports itself full (Node's default: 16 KiB). */
export const WRITE_HIGH_WATER = 1 << 20

/**
 * mqtt.js waits for `drain` once per packet written while the socket reports itself full, with
 * one `once('drain')` listener each; under a burst thousands pile up on one socket and removing
 * them costs O(n) each (6% of the hub's CPU in a 20,000-event burst, node --cpu-prof). A larger
 * threshold lets a burst's packets queue in the stream without a listener each. The bytes, and
 * their order, are the same.
 */
function roomyWrites(stream: unknown): void {
  const state = (stream as { _writableState?: { highWaterMark?: number } } | null)?._writableState
  if (state && typeof state.highWaterMark === 'number' && state.highWaterMark < WRITE_HIGH_WATER)
    state.highWaterMark = WRITE_HIGH_WATER
}
