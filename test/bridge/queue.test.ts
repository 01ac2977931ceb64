// `publish` rejecting (broker down) loses no QoS1 event: held in order, retried, bounded.
import t from 'tap'
import { createSimulatingBridge } from '../../boards/simulator/bridge.ts'
import { createPublishQueue, type QueueItem } from '../../bridge/publish-queue.ts'
import { waitFor } from '../helpers/wait.ts'
import { collect, connectClient, startBroker } from './broker.ts'

t.test('broker down then back: every event arrives once, in order', async (t) => {
  const broker = await startBroker(t)
  const hub = await connectClient(t, broker.url, { reconnectPeriod: 20 })
  let gate = true
  const bridge = createSimulatingBridge({
    boards: [
      {
        name: 'vend1',
        port: '/sim/queue-vend1',
        simulate: { rate: 0, text: (n) => `e${n}` },
        heartbeatMs: 0,
      },
    ],
    // The hub's wiring refuses while disconnected (rather than letting mqtt.js buffer without bound).
    publish: async (topic, payload, opts) => {
      if (!gate || !hub.connected) throw new Error('broker unreachable')
      await hub.publishAsync(topic, payload, opts)
    },
    backoff: { initialMs: 5, maxMs: 40 },
  })
  t.teardown(() => bridge.close())
  await bridge.start()
  const sim = bridge.simulated('vend1')!
  sim.emitEvents(10)
  await waitFor(() => bridge.stats().boards.vend1!.published === 10, 'first 10 delivered')

  gate = false
  await broker.stop()
  sim.emitEvents(500)
  await waitFor(() => bridge.stats().queue.pending === 500, '500 events held while the broker is down')
  await waitFor(() => bridge.stats().queue.retries > 0, 'retries happen')
  t.equal(bridge.stats().boards.vend1!.published, 10, 'nothing counted as published while down')

  await broker.restart()
  const sub = await connectClient(t, broker.url)
  const inbox = await collect(sub, 'boards/vend1/coin')
  await waitFor(() => hub.connected, 'hub client reconnected')
  gate = true
  await inbox.until(500)
  t.same(
    inbox.got.map((m) => m.payload),
    Array.from({ length: 500 }, (_, i) => `e${i + 10}`),
    'all 500 held events, once each, in order',
  )
  // The subscriber can see the last events before the broker's PUBACKs reach the bridge: wait
  // for nothing in flight either, or the count below races the acknowledgements.
  await waitFor(() => {
    const q = bridge.stats().queue
    return q.pending === 0 && q.inflight === 0
  }, 'queue empty and nothing in flight')
  t.equal(bridge.stats().boards.vend1!.published, 510)
  t.equal(bridge.stats().queue.dropped, 0)
})

t.test(
  'past the bound the oldest events are dropped and counted; availability is kept and coalesced',
  async (t) => {
    let up = false
    let failures = 0
    const delivered: string[] = []
    const dropped: string[] = []
    const q = createPublishQueue({
      publish: async (topic, payload) => {
        if (!up) throw new Error('down')
        delivered.push(`${topic}=${payload}`)
      },
      max: 100,
      highWater: 50,
      window: 8,
      // One slow retry: after the first failure everything waits, so what is dropped is exact.
      retryInitialMs: 300,
      retryMaxMs: 300,
      onDelivered: () => undefined,
      onDropped: (i: QueueItem) => void dropped.push(i.payload),
      onFailed: () => void failures++,
    })
    t.teardown(() => q.close())
    const avail = (s: string) =>
      q.push({ topic: 'boards/b/availability', payload: s, qos: 1, retain: true, board: 'b' })
    avail('online')
    await waitFor(() => failures === 1, 'the first publish to fail') // the queue now waits for its retry
    for (let i = 0; i < 150; i++)
      q.push({ topic: 'boards/b/x', payload: String(i), qos: 1, retain: false, board: 'b' })
    avail('offline')
    avail('online')
    t.equal(q.stats().dropped, 50, '50 over the bound dropped')
    t.same(
      dropped,
      Array.from({ length: 50 }, (_, i) => String(i)),
      'the oldest ones',
    )
    up = true
    t.ok(await q.drain(10_000), 'drains once the broker is back')
    const events = delivered.filter((d) => d.startsWith('boards/b/x='))
    t.same(
      events,
      Array.from({ length: 100 }, (_, i) => `boards/b/x=${i + 50}`),
      'the newest 100, in order',
    )
    t.same(
      delivered.filter((d) => d.includes('availability')),
      ['boards/b/availability=online'],
      'only the latest availability is sent',
    )
    t.equal(q.stats().delivered, 101)
  },
)

t.test('a publish function that throws synchronously is treated as a failure, not a crash', async (t) => {
  let calls = 0
  const q = createPublishQueue({
    publish: (() => {
      calls++
      if (calls === 1) throw new Error('sync boom')
      return Promise.resolve()
    }) as never,
    max: 10,
    highWater: 5,
    window: 1,
    retryInitialMs: 1,
    retryMaxMs: 1,
    onDelivered: () => undefined,
    onDropped: () => undefined,
    onFailed: () => undefined,
  })
  q.push({ topic: 't', payload: 'p', qos: 1, retain: false, board: 'b' })
  t.ok(await q.drain(5000))
  t.equal(q.stats().delivered, 1)
  t.equal(q.stats().retries, 1)
  q.close()
})

t.test('a slow but working broker slows the port down instead of dropping (backpressure)', async (t) => {
  const got: string[] = []
  let maxPending = 0
  const bridge = createSimulatingBridge({
    boards: [
      {
        name: 'burst',
        port: '/sim/queue-burst',
        simulate: { rate: 0, text: (n) => String(n) },
        heartbeatMs: 0,
      },
    ],
    publish: async (topic, payload) => {
      await new Promise((r) => setTimeout(r, 0))
      if (topic === 'boards/burst/coin') got.push(payload)
    },
    maxQueued: 100,
  })
  t.teardown(() => bridge.close())
  await bridge.start()
  const watch = setInterval(() => (maxPending = Math.max(maxPending, bridge.stats().queue.pending)), 1)
  t.teardown(() => clearInterval(watch))
  bridge.simulated('burst')!.emitEvents(5000) // one burst, 50× the bound
  await waitFor(() => got.length === 5000, 'all 5000 delivered')
  t.same(
    got,
    Array.from({ length: 5000 }, (_, i) => String(i)),
    'in order',
  )
  t.equal(bridge.stats().queue.dropped, 0, 'none dropped')
  t.ok(maxPending <= 100, `the queue stayed within its bound (max seen ${maxPending})`)
})
