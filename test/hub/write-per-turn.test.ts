// The embedded broker sends what it writes to a connection during one turn of the event loop in
// one write (hub/broker/write-per-turn.ts), on a real Aedes with LevelDB and real MQTT clients:
// a flood of deliveries leaves in a handful of writes, whole and in order, at QoS 0 and 1; a
// lone message still arrives; a stream that cannot gather writes (as a WebSocket stream) is left
// as it was.
import { type Duplex, PassThrough } from 'node:stream'
import t from 'tap'
import { writePerTurn } from '../../hub/broker/write-per-turn.ts'
import { waitFor } from '../helpers/wait.ts'
import { client as connect, inbox } from './broker-auth-helpers.ts'
import { startEmbeddedBroker } from './embedded-broker.ts'

interface Counted {
  _write: (...a: unknown[]) => unknown
  _writev: (...a: unknown[]) => unknown
}

/** How many writes the broker's socket to `clientId` makes from now on (one per system call). */
function writesTo(aedes: unknown, clientId: string): { count: number } {
  const c = (aedes as { clients: Record<string, { conn: Counted }> }).clients[clientId]
  if (!c) throw new Error(`no client ${clientId}`)
  const n = { count: 0 }
  const one = c.conn._write.bind(c.conn)
  const many = c.conn._writev.bind(c.conn)
  c.conn._write = (...a) => {
    n.count++
    return one(...a)
  }
  c.conn._writev = (...a) => {
    n.count++
    return many(...a)
  }
  return n
}

for (const qos of [0, 1] as const) {
  t.test(`QoS ${qos}: a flood of deliveries leaves in a few writes, whole and in order`, async (t) => {
    const broker = await startEmbeddedBroker(t)
    const sub = await connect(t, broker.url, { clientId: `turn-sub-${qos}` })
    const got = await inbox(sub, 'turn/#')
    const writes = writesTo(broker.aedes, `turn-sub-${qos}`)
    const count = 500
    // One turn: Aedes delivers each from a setImmediate of its own, all in the next check phase.
    for (let i = 0; i < count; i++)
      broker.aedes.publish(
        { cmd: 'publish', topic: 'turn/x', payload: String(i), qos, retain: false, dup: false },
        () => undefined,
      )
    await waitFor(() => got.length === count, 'every message')
    t.same(
      got,
      Array.from({ length: count }, (_, i) => `turn/x ${i}`),
      `all ${count} in the order published`,
    )
    t.ok(writes.count * 20 <= count, `${count} packets in ${writes.count} writes`)
  })
}

t.test('a lone message still goes out, and the next turn writes again', async (t) => {
  const broker = await startEmbeddedBroker(t)
  const sub = await connect(t, broker.url, { clientId: 'lone-sub' })
  const got = await inbox(sub, 'lone/#')
  const pub = await connect(t, broker.url)
  for (let i = 0; i < 3; i++) {
    await pub.publishAsync('lone/x', String(i), { qos: 1 })
    await waitFor(() => got.length === i + 1, `message ${i}`)
  }
  t.same(got, ['lone/x 0', 'lone/x 1', 'lone/x 2'])
})

t.test('a stream that cannot gather writes is left as it is', async (t) => {
  const stream = new PassThrough() as Duplex
  const write = stream.write
  writePerTurn(stream)
  t.equal(stream.write, write, 'write is not wrapped')
  t.equal(stream.writableCorked, 0)
})
