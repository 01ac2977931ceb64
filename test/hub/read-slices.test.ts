// The embedded broker reads each connection in slices (hub/broker/read-slices.ts), on a real
// Aedes with LevelDB on loopback and real MQTT clients over TCP and WebSocket: Aedes never parses
// more than a slice at once, a packet many slices long arrives whole, and a flood of packets that
// Aedes handles at once (QoS 0) or later (QoS 1, 2) arrives whole and in order. While a slice's
// QoS 1 messages wait for their PUBACK, the next slice is read and handled, and no further one;
// none is read ahead while the trigger feed holds the client's messages.
import t from 'tap'
import { READ_SLICE } from '../../hub/broker/read-slices.ts'
import { waitFor } from '../helpers/wait.ts'
import { startEmbeddedBroker } from './embedded-broker.ts'
import { client as connect } from './broker-auth-helpers.ts'

/** The sizes of what Aedes' parser is given for one client, from now on. */
function parsedSizes(aedes: unknown, clientId: string): number[] {
  const client = (aedes as { clients: Record<string, { _parser: { parse(b: Buffer): unknown } }> }).clients[
    clientId
  ]
  if (!client) throw new Error(`no client ${clientId}`)
  const sizes: number[] = []
  const parse = client._parser.parse
  client._parser.parse = (b: Buffer) => {
    sizes.push(b.length)
    return parse(b)
  }
  return sizes
}

for (const via of ['tcp', 'ws'] as const) {
  t.test(`${via}: a message many slices long arrives whole, at every QoS`, async (t) => {
    const broker = await startEmbeddedBroker(t, { wsPort: 0 })
    const url = via === 'tcp' ? broker.url : (broker.wsUrl as string)
    const sub = await connect(t, url)
    const got = new Map<string, Buffer>()
    sub.on('message', (topic, payload) => got.set(topic, payload))
    await sub.subscribeAsync('big/#', { qos: 2 })
    const pub = await connect(t, url, { clientId: `big-pub-${via}` })
    const sizes = parsedSizes(broker.aedes, `big-pub-${via}`)
    const body = Buffer.alloc(25 * READ_SLICE + 123)
    for (let i = 0; i < body.length; i++) body[i] = (i * 7) & 0xff
    for (const qos of [0, 1, 2] as const) await pub.publishAsync(`big/${qos}`, body, { qos })
    await waitFor(() => got.size === 3, 'the three big messages')
    for (const qos of [0, 1, 2]) t.ok(got.get(`big/${qos}`)?.equals(body), `QoS ${qos} intact`)
    t.ok(
      Math.max(...sizes) <= READ_SLICE,
      `no parse was given more than a slice (largest ${Math.max(...sizes)})`,
    )
    t.ok(sizes.length >= 75, `the three messages took ${sizes.length} slices`)
  })
}

t.test('a flood at QoS 0, 1 and 2 arrives whole and in order, read a slice at a time', async (t) => {
  const broker = await startEmbeddedBroker(t)
  const sub = await connect(t, broker.url)
  const got: Record<number, number[]> = { 0: [], 1: [], 2: [] }
  sub.on('message', (topic, payload) => got[Number(topic.split('/')[1])]!.push(Number(payload.toString())))
  await sub.subscribeAsync('flood/+', { qos: 2 })
  const pub = await connect(t, broker.url, { clientId: 'flood-pub' })
  const sizes = parsedSizes(broker.aedes, 'flood-pub')
  // QoS 2 stays under Aedes' 1,000 unreleased inbound messages, past which it drops the client.
  const count = { 0: 3000, 1: 3000, 2: 900 } as const
  const acks: Promise<unknown>[] = []
  // Sent without waiting: the broker finds far more than a slice buffered.
  for (let i = 0; i < count[0]; i++)
    for (const qos of [0, 1, 2] as const)
      if (i < count[qos]) acks.push(pub.publishAsync(`flood/${qos}`, String(i), { qos }))
  await Promise.all(acks)
  await waitFor(
    () => got[0]!.length === count[0] && got[1]!.length === count[1] && got[2]!.length === count[2],
    'every message',
  )
  for (const qos of [0, 1, 2]) {
    const seq = got[qos]!
    const wrong = seq.findIndex((n, i) => n !== i)
    t.equal(wrong, -1, `QoS ${qos}: all ${seq.length} in the order sent`)
  }
  t.ok(
    Math.max(...sizes) <= READ_SLICE,
    `no parse was given more than a slice (largest ${Math.max(...sizes)})`,
  )
})

/** `n` QoS 1 messages on `ahead/<i>` sent at once; resolves the count acknowledged so far on demand. */
function flood(
  pub: { publishAsync(topic: string, payload: string, o: { qos: 1 }): Promise<unknown> },
  n: number,
) {
  let acked = 0
  const all = Array.from({ length: n }, (_, i) =>
    pub.publishAsync(`ahead/${i}`, `message ${i}`, { qos: 1 }).then(() => acked++),
  )
  return { acked: () => acked, all: Promise.all(all) }
}

/** A few turns of the event loop, for a read that could still be scheduled to happen. */
const turns = async (n = 20) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r))
}

t.test(
  'while a slice waits for its PUBACKs, the next one is read and handled, and no further one',
  async (t) => {
    // Messages on a trigger filter, with no router attached yet: kept, their PUBACKs withheld.
    const broker = await startEmbeddedBroker(t, { triggerFilters: ['ahead/#'] })
    const pub = await connect(t, broker.url, { clientId: 'ahead-pub' })
    const sizes = parsedSizes(broker.aedes, 'ahead-pub')
    const sent = flood(pub, 2000)
    await waitFor(() => sizes.length >= 2, 'a second slice read')
    await turns()
    t.equal(sizes.length, 2, 'two slices read while the first waits for its PUBACKs')
    t.equal(sent.acked(), 0, 'no PUBACK went out')
    const taken: string[] = []
    broker.triggers.attach(
      (message, done) => {
        taken.push(message.topic)
        done()
      },
      { cap: 10_000, onCap: () => undefined },
    )
    await sent.all
    t.ok(sizes.length >= 6, `every message read, in ${sizes.length} slices`)
    t.equal(taken.length, 2000, 'every message reached the triggers')
    t.equal(
      taken.findIndex((topic, i) => topic !== `ahead/${i}`),
      -1,
      'in the order sent',
    )
  },
)

t.test("no slice is read ahead while the trigger feed holds the client's messages", async (t) => {
  const broker = await startEmbeddedBroker(t, { triggerFilters: ['ahead/#'] })
  broker.triggers.attach((_message, done) => done(), { cap: 10_000, onCap: () => undefined })
  // As when the disk is below its reserve: messages on trigger topics wait before they are published.
  broker.triggers.hold(true)
  const pub = await connect(t, broker.url, { clientId: 'held-pub' })
  const sizes = parsedSizes(broker.aedes, 'held-pub')
  const sent = flood(pub, 2000)
  await waitFor(() => sizes.length >= 1 && broker.triggers.waiting() > 0, 'the first slice held')
  await turns()
  t.equal(sizes.length, 1, 'one slice read while its messages are held')
  t.equal(sent.acked(), 0, 'no PUBACK went out')
  broker.triggers.hold(false)
  await sent.all
  t.ok(sizes.length >= 6, `every message read once held no more, in ${sizes.length} slices`)
})
