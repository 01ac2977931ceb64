// The embedded broker's in-process trigger feed, on a real Aedes with LevelDB on loopback: what a
// publisher is told (PUBACK, PUBREC) waits for the admission the feed hands over, and nothing is
// taken twice or lost before the router attaches or at the cap.
import t from 'tap'
import { directPublish } from '../../hub/broker/direct-publish.ts'
import type { FedMessage } from '../../hub/broker/trigger-feed.ts'
import { waitFor } from '../helpers/wait.ts'
import { startEmbeddedBroker } from './embedded-broker.ts'
import { client as connect } from './broker-auth-helpers.ts'

/** A promise's state, read without waiting for it. */
function watch<T>(p: Promise<T>): { settled: () => boolean; p: Promise<T> } {
  let done = false
  p.then(
    () => (done = true),
    () => (done = true),
  )
  return { settled: () => done, p }
}

/** A take that keeps each message and its `done`, for the test to release. */
function holdingTake() {
  const taken: { message: FedMessage; done: () => void }[] = []
  return {
    taken,
    take: (message: FedMessage, done: () => void) => taken.push({ message, done }),
    releaseAll() {
      for (const x of taken) x.done()
    },
  }
}

t.test(
  'a QoS 1 PUBACK on a trigger topic waits for the admission; other topics are acknowledged at once',
  async (t) => {
    const broker = await startEmbeddedBroker(t, { triggerFilters: ['in/+'] })
    const h = holdingTake()
    broker.triggers.attach(h.take, { cap: 100, onCap: () => undefined })
    const pub = await connect(t, broker.url, { clientId: 'pub-1' })

    const event = watch(pub.publishAsync('in/1', '{"v":1}', { qos: 1 }))
    await waitFor(() => h.taken.length === 1, 'the event handed to the feed')
    // Published after the event on the same connection: its PUBACK comes once it is stored.
    await pub.publishAsync('other/1', 'x', { qos: 1 })
    t.notOk(event.settled(), 'the event is not acknowledged while its admission is under way')
    const m = h.taken[0]!.message
    t.same(
      { topic: m.topic, payload: m.payload.toString(), qos: m.qos },
      { topic: 'in/1', payload: '{"v":1}', qos: 1 },
    )
    t.match(m.once, /^from pub-1 \d+$/, "the publisher and its packet id name the message's once-only key")
    h.releaseAll()
    await event.p
    t.equal(h.taken.length, 1, 'the other topic was not handed over')
  },
)

t.test('a QoS 2 PUBREC waits for the admission too', async (t) => {
  const broker = await startEmbeddedBroker(t, { triggerFilters: ['in/#'] })
  const h = holdingTake()
  broker.triggers.attach(h.take, { cap: 100, onCap: () => undefined })
  const pub = await connect(t, broker.url)
  const event = watch(pub.publishAsync('in/q2', 'x', { qos: 2 }))
  await waitFor(() => h.taken.length === 1, 'the QoS 2 event handed to the feed')
  await pub.publishAsync('other/1', 'x', { qos: 1 })
  t.notOk(event.settled(), 'no PUBREC (so no PUBCOMP) before the admission')
  t.equal(h.taken[0]!.message.once, null, 'QoS 2 repeats are Aedes business: no once-only key')
  h.releaseAll()
  await event.p
})

t.test(
  "before the router attaches, events are kept in order with their PUBACKs withheld; the hub's own are not held up",
  async (t) => {
    const broker = await startEmbeddedBroker(t, { triggerFilters: ['in/+'], hubClientId: 'hub-1' })
    const pub = await connect(t, broker.url, { clientId: 'pub-2' })
    const outside = [1, 2, 3].map((n) => watch(pub.publishAsync(`in/${n}`, String(n), { qos: 1 })))
    await waitFor(() => broker.triggers.kept() === 3, 'three events kept')
    // The hub publishes its state (and its boards' events) before its router starts.
    await directPublish(broker.aedes, broker.heard)('in/4', '4', { qos: 1, retain: false })
    const hub = await connect(t, broker.url, { clientId: 'hub-1', ...broker.hubLogin })
    await hub.publishAsync('in/5', '5', { qos: 1 })
    t.equal(broker.triggers.kept(), 5)
    t.notOk(
      outside.some((o) => o.settled()),
      'no outside event acknowledged before it is admitted',
    )

    const h = holdingTake()
    broker.triggers.attach(h.take, { cap: 100, onCap: () => undefined })
    t.same(
      h.taken.map((x) => x.message.topic),
      ['in/1', 'in/2', 'in/3', 'in/4', 'in/5'],
      'taken in the order they came',
    )
    t.same(
      h.taken.map((x) => x.message.once?.split(' ').slice(0, 2).join(' ') ?? null),
      ['from pub-2', 'from pub-2', 'from pub-2', null, null],
      'only an outside publisher is owed a once-only check',
    )
    h.releaseAll()
    await Promise.all(outside.map((o) => o.p))
    t.equal(broker.triggers.kept(), 0)
  },
)

t.test(
  "once the router is attached, the hub's own publish on a trigger topic finishes when its run is admitted",
  async (t) => {
    // An mqtt_publish step that starts another SOP is done only once that run is recorded: a kill in
    // between would otherwise lose the second run, with the step not run again.
    const broker = await startEmbeddedBroker(t, { triggerFilters: ['in/+'], hubClientId: 'hub-1' })
    const h = holdingTake()
    broker.triggers.attach(h.take, { cap: 100, onCap: () => undefined })
    const publish = directPublish(broker.aedes, broker.heard)
    const chained = watch(publish('in/1', 'x', { qos: 1, retain: false }))
    await waitFor(() => h.taken.length === 1, 'the event handed to the feed')
    // A message on another topic is done as soon as it is queued; published after, it is done first.
    await publish('other/1', 'x', { qos: 1, retain: false })
    t.notOk(chained.settled(), 'not done while its run is being admitted')
    h.releaseAll()
    await chained.p
    t.pass('done once admitted')
  },
)

t.test('after the router detaches, events are kept again, unacknowledged, for the next attach', async (t) => {
  const broker = await startEmbeddedBroker(t, { triggerFilters: ['in/+'] })
  const first = holdingTake()
  broker.triggers.attach(first.take, { cap: 100, onCap: () => undefined })
  broker.triggers.detach()
  const pub = await connect(t, broker.url)
  const event = watch(pub.publishAsync('in/1', 'x', { qos: 1 }))
  await waitFor(() => broker.triggers.kept() === 1, 'the event kept')
  t.equal(first.taken.length, 0, 'a detached take gets nothing')
  t.notOk(event.settled())
  const second = holdingTake()
  broker.triggers.attach(second.take, { cap: 100, onCap: () => undefined })
  second.releaseAll()
  await event.p
  t.equal(second.taken.length, 1)
})

for (const qos of [1, 0] as const)
  t.test(
    `QoS ${qos} events beyond the cap: Aedes stops reading their publisher, other clients go on, every event arrives once, in order`,
    async (t) => {
      const broker = await startEmbeddedBroker(t, { triggerFilters: ['in/+'] })
      const taken: FedMessage[] = []
      const pendingDone: (() => void)[] = []
      let capped = 0
      broker.triggers.attach(
        (m, done) => {
          taken.push(m)
          pendingDone.push(done)
        },
        { cap: 5, onCap: () => capped++ },
      )
      const pub = await connect(t, broker.url)
      const N = 20_000
      const acks: Promise<unknown>[] = []
      for (let i = 0; i < N; i++) acks.push(pub.publishAsync(`in/${i}`, String(i), { qos }))
      // The feed keeps what it is given; the publisher's socket is read no further once a read's
      // packets wait. Wait until no more arrive, then look.
      let seen = -1
      await waitFor(async () => {
        const now = taken.length
        const still = now === seen
        seen = now
        await new Promise((r) => setTimeout(r, 50))
        return still && now > 0
      }, 'the feed to stop growing')
      t.ok(taken.length < N, `reading stopped (${taken.length} of ${N} taken)`)
      // QoS 1: the withheld PUBACKs stop the reads before the cap has to (Aedes reads on once
      // a read's packets are done). QoS 0 has no PUBACK: the cap holds the next ones back.
      if (qos === 0) t.ok(capped > 0, 'the cap was reported')
      else t.ok(taken.length > 5, 'the PUBACKs, not the cap, stopped the reads')
      // Meanwhile the broker carries everybody else's messages.
      const sub = await connect(t, broker.url)
      await sub.subscribeAsync('other/#', { qos: 1 })
      const other = new Promise((resolve) => sub.once('message', resolve))
      const third = await connect(t, broker.url)
      await third.publishAsync('other/1', 'x', { qos: 1 })
      await other
      t.pass('a message on another topic went through while the events waited')
      // Admissions go through a few at a time, as an engine's sync batches would.
      await waitFor(async () => {
        for (const d of pendingDone.splice(0)) d()
        await new Promise((r) => setImmediate(r))
        return taken.length === N && pendingDone.length === 0
      }, 'every event taken')
      await Promise.all(acks)
      t.same(
        taken.map((m) => Number(m.payload.toString())),
        Array.from({ length: N }, (_, i) => i),
        'all of them, once each, in order',
      )
    },
  )

t.test('a flood of messages the feed answers at once keeps the broker up', async (t) => {
  // mqemitter starts its next queued message from inside a listener's callback: answered
  // synchronously, a queue of thousands recursed until the stack overflowed.
  const broker = await startEmbeddedBroker(t, { triggerFilters: ['in/+'] })
  let taken = 0
  broker.triggers.attach(
    (_m, done) => {
      taken++
      done()
    },
    { cap: 100_000, onCap: () => undefined },
  )
  const sub = await connect(t, broker.url)
  await sub.subscribeAsync('busy/#', { qos: 0 })
  let got = 0
  sub.on('message', () => got++)
  // Deliveries to a client take a turn of the event loop: the first messages fill mqemitter's
  // 100 slots, and the ones behind them, for the feed alone, wait in its queue.
  const BUSY = 200
  const IDLE = 20_000
  const publish = (topic: string): Promise<void> =>
    new Promise((resolve, reject) =>
      broker.aedes.publish(
        { cmd: 'publish', topic, payload: Buffer.from('x'), qos: 0, retain: false, dup: false },
        (err) => (err ? reject(err) : resolve()),
      ),
    )
  const all: Promise<void>[] = []
  for (let i = 0; i < BUSY; i++) all.push(publish(`busy/${i}`))
  // Half on a topic nobody triggers on, half handed over and not waited for.
  for (let i = 0; i < IDLE; i++) all.push(publish(i % 2 ? `idle/${i}` : `in/${i}`))
  await Promise.all(all)
  await waitFor(() => got === BUSY, 'every busy/ message delivered')
  t.equal(got, BUSY)
  t.equal(taken, IDLE / 2)
})
