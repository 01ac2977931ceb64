// TCP_NODELAY on both ends of the hub's MQTT connections (hub/broker/no-delay.ts): the embedded
// broker's accepted sockets, and an mqtt.js client's socket at its first connect and after a
// reconnect. Read from the real sockets (Node keeps the flag it last set on the socket).
import t from 'tap'
import type { Socket } from 'node:net'
import mqtt from 'mqtt'
import { withNoDelay } from '../../hub/broker/no-delay.ts'
import { waitFor } from '../helpers/wait.ts'
import { startEmbeddedBroker } from './embedded-broker.ts'

function noDelayOf(socket: unknown): boolean {
  const s = socket as Socket & Record<symbol, unknown>
  const sym = Object.getOwnPropertySymbols(s).find((k) => k.description === 'kSetNoDelay')
  if (!sym) throw new Error('this Node keeps no kSetNoDelay on sockets')
  return s[sym] === true
}

t.test('the embedded broker sets TCP_NODELAY on each connection it accepts', async (t) => {
  const broker = await startEmbeddedBroker(t)
  const c = await mqtt.connectAsync(broker.url, { clientId: 'nd-plain', reconnectPeriod: 0 })
  t.teardown(() => c.endAsync(true))
  const conn = await waitFor(
    () =>
      (broker.aedes as unknown as { clients: Record<string, { conn: unknown }> }).clients['nd-plain']?.conn,
    'the broker to hold the client',
  )
  t.equal(noDelayOf(conn), true, 'the broker side')
  t.equal(noDelayOf(c.stream), false, 'an mqtt.js client left alone keeps Nagle (the reason for withNoDelay)')
})

t.test('withNoDelay sets it on the client socket, and again on the socket of a reconnect', async (t) => {
  const broker = await startEmbeddedBroker(t)
  const c = withNoDelay(await mqtt.connectAsync(broker.url, { clientId: 'nd-client', reconnectPeriod: 50 }))
  t.teardown(() => c.endAsync(true))
  const first = c.stream
  t.equal(noDelayOf(first), true, 'first socket')
  first.destroy()
  await waitFor(() => c.connected && c.stream !== first, 'the client to reconnect on a new socket')
  t.equal(noDelayOf(c.stream), true, 'the reconnect socket')
})
