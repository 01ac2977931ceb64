// Event → MQTT end to end: a simulated board on the serialport mock binding, the bridge, a real
// Aedes broker on loopback, a real mqtt.js subscriber.
import t from 'tap'
import { createSimulatingBridge } from '../../boards/simulator/bridge.ts'
import { vendingCoin } from '../../boards/simulator/board.ts'
import { waitFor } from '../helpers/wait.ts'
import { collect, connectClient, publishVia, startBroker } from './broker.ts'

t.test('simulated vend1 coin events reach an MQTT subscriber, availability is retained', async (t) => {
  const broker = await startBroker(t)
  const hubClient = await connectClient(t, broker.url)
  const sub = await connectClient(t, broker.url)
  const inbox = await collect(sub, 'boards/#')
  const bridge = createSimulatingBridge({
    boards: [{ name: 'vend1', port: '/sim/mqtt-vend1', simulate: { rate: 0 }, heartbeatMs: 0 }],
    publish: publishVia(hubClient),
  })
  t.teardown(() => bridge.close())
  await bridge.start()
  await inbox.until(2)
  t.match(
    inbox.got[0],
    { topic: 'boards/vend1/info', retain: false },
    'the hello is published as the board info first',
  )
  t.match(JSON.parse(inbox.got[0]!.payload), {
    name: 'vend1',
    fw: 'svc-companion/0.2.0',
    version: '0.2.0',
    proto: 1,
    at: /^\d{4}-\d\d-\d\dT/,
  })
  t.same(
    inbox.got[1],
    { topic: 'boards/vend1/availability', payload: 'online', retain: false },
    'online once the board said hello (live delivery is not flagged retained)',
  )

  bridge.simulated('vend1')!.emitEvents(5)
  await inbox.until(7)
  const events = inbox.got.slice(2)
  t.same(
    events.map((e) => [e.topic, e.payload]),
    [0, 1, 2, 3, 4].map((n) => ['boards/vend1/coin', vendingCoin(n)]),
    'events in order, the text as payload',
  )
  t.equal(events[0]!.payload, '{"slot":"A1","amount":2}')
  await waitFor(() => bridge.stats().boards.vend1!.published === 5, 'acks counted')
  const s = bridge.stats().boards.vend1!
  // Lines: the hello, the reply to the ping sent at open, five events.
  t.match(s, {
    state: 'online',
    hello: 'vend1',
    fw: 'svc-companion/0.2.0',
    version: '0.2.0',
    proto: 1,
    hellos: 1,
    lines: 7,
    events: 5,
    published: 5,
    garbage: 0,
    oversized: 0,
  })
  t.match(s.last_event_at, /^\d{4}-\d\d-\d\dT/)

  // A late subscriber sees the retained availability.
  const late = await connectClient(t, broker.url)
  const lateInbox = await collect(late, 'boards/vend1/availability')
  await lateInbox.until(1)
  t.same(lateInbox.got[0], { topic: 'boards/vend1/availability', payload: 'online', retain: true })

  await bridge.close()
  await lateInbox.until(2)
  t.same(
    lateInbox.got[1],
    { topic: 'boards/vend1/availability', payload: 'offline', retain: false },
    'offline on close',
  )
  t.equal(bridge.stats().boards.vend1!.state, 'closed')
})

t.test(
  'commands reach the simulated board and are answered; bad commands rejected without a write',
  async (t) => {
    const broker = await startBroker(t)
    const hubClient = await connectClient(t, broker.url)
    const bridge = createSimulatingBridge({
      boards: [{ name: 'vend1', port: '/sim/cmd-vend1', simulate: { rate: 0 }, heartbeatMs: 0 }],
      publish: publishVia(hubClient),
    })
    t.teardown(() => bridge.close())
    await bridge.start()
    t.same(await bridge.send('vend1', 'ping', {}), { ok: true, result: 'pong' })
    t.same(await bridge.send('vend1', 'gpio_write', { pin: 13, value: 1 }), {
      ok: true,
      result: { pin: 13, value: 1 },
    })
    t.same(await bridge.send('vend1', 'gpio_read', { pin: 13 }), { ok: true, result: { pin: 13, value: 1 } })
    t.same(await bridge.send('vend1', 'gpio_read', { pin: 99 }), {
      ok: false,
      error: 'args.pin: must be an integer from 0 to 69',
      code: 'board_error',
    })
    // Many at once: one at a time on the wire, each answered with its own result.
    const many = await Promise.all(
      [0, 1, 0, 1].map((v) => bridge.send('vend1', 'gpio_write', { pin: 7, value: v })),
    )
    t.same(
      many.map((r) => r.ok && (r.result as { value: number }).value),
      [0, 1, 0, 1],
    )
    const before = bridge.simulated('vend1')!.stats().commands
    const bad = await bridge.send('vend1', 'Bad Name', {})
    t.equal(bad.ok, false)
    t.match(bad, { error: /^command: \/cmd /, code: 'bad_command' })
    t.same(await bridge.send('nope', 'ping', {}), {
      ok: false,
      error: 'unknown board "nope" (configured: vend1)',
      code: 'unknown_board',
    })
    t.match(await bridge.send('vend1', 'ping', {}, { timeoutMs: -1 }), { ok: false, error: /timeoutMs/ })
    t.equal(bridge.simulated('vend1')!.stats().commands, before, 'nothing written for rejected commands')

    bridge.simulated('vend1')!.setMute(true)
    const r = await bridge.send('vend1', 'ping', {}, { timeoutMs: 50 })
    t.match(r, { ok: false, error: /did not answer "ping" \(id \d+\) within 50 ms/ })
    t.equal(bridge.stats().boards.vend1!.timeouts, 1)
  },
)
