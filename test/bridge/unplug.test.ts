// Unplug and replug: the port is lost (a disconnect from the binding, or a board that stops
// answering the heartbeat), `offline` is published, and the bridge reopens with backoff until
// the board is back and has answered, `online` again, events flowing. An open port alone is
// never `online` (hub/DESIGN.md, "MQTT topics").
import t from 'tap'
import { createBridge } from '../../bridge/index.ts'
import { createSimulatedBoard } from '../../boards/simulator/board.ts'
import { createDeviceBinding } from '../../boards/simulator/device-binding.ts'
import { waitFor } from '../helpers/wait.ts'
import { collect, connectClient, publishVia, startBroker } from './broker.ts'

t.test('unplug and replug 50 times: back each time, nothing lost while plugged', async (t) => {
  const broker = await startBroker(t)
  const hub = await connectClient(t, broker.url)
  const sub = await connectClient(t, broker.url)
  const avail = await collect(sub, 'boards/vend1/availability')
  const coins = await collect(await connectClient(t, broker.url), 'boards/vend1/coin')
  const binding = createDeviceBinding()
  const path = '/sim/unplug-vend1'
  const board = createSimulatedBoard('vend1', { rate: 0, text: (n) => String(n) })
  binding.attach(path, board)
  const bridge = createBridge({
    boards: [{ name: 'vend1', port: path, heartbeatMs: 0 }],
    publish: publishVia(hub),
    binding,
    backoff: { initialMs: 1, maxMs: 8 },
  })
  t.teardown(() => bridge.close())
  await bridge.start()
  await avail.until(1)
  const cycles = 50
  for (let i = 0; i < cycles; i++) {
    board.emitEvents(2)
    await coins.until(2 * (i + 1))
    binding.unplug(path)
    await waitFor(() => bridge.stats().boards.vend1!.state === 'offline', `offline after unplug ${i + 1}`)
    t.equal(binding.isOpen(path), false)
    t.match(
      await bridge.send('vend1', 'ping', {}),
      { ok: false, error: 'board vend1 is offline' },
      'commands fail at once while offline',
    )
    binding.replug(path)
    await waitFor(() => bridge.stats().boards.vend1!.state === 'online', `online after replug ${i + 1}`)
  }
  board.emitEvents(1)
  await coins.until(2 * cycles + 1)
  t.same(
    coins.got.map((c) => c.payload),
    Array.from({ length: 2 * cycles + 1 }, (_, n) => String(n)),
    'every event emitted while plugged arrived once, in order',
  )
  await avail.until(1 + 2 * cycles)
  t.same(
    avail.got.map((a) => a.payload),
    ['online', ...Array.from({ length: cycles }, () => ['offline', 'online']).flat()],
    'availability offline/online each time',
  )
  const s = bridge.stats().boards.vend1!
  t.equal(s.reconnects, cycles)
  t.equal(s.events, 2 * cycles + 1)
  t.equal(s.garbage, 0)
  t.same(
    await bridge.send('vend1', 'ping', {}),
    { ok: true, result: 'pong' },
    'commands work after the last replug',
  )
})

t.test(
  'a board that hangs goes offline at the heartbeat and stays offline until it answers again',
  async (t) => {
    const broker = await startBroker(t)
    const hub = await connectClient(t, broker.url)
    const avail = await collect(await connectClient(t, broker.url), 'boards/quiet/availability')
    const binding = createDeviceBinding()
    const path = '/sim/heartbeat-quiet'
    const board = createSimulatedBoard('quiet', { rate: 0 })
    binding.attach(path, board)
    const bridge = createBridge({
      boards: [{ name: 'quiet', port: path, heartbeatMs: 60 }],
      publish: publishVia(hub),
      binding,
      backoff: { initialMs: 1, maxMs: 5 },
    })
    t.teardown(() => bridge.close())
    await bridge.start()
    await avail.until(1)
    t.equal(avail.got[0]!.payload, 'online', 'online once it said hello')
    // It hangs: port open, nothing answers.
    board.setMute(true)
    await waitFor(
      () => bridge.stats().boards.quiet!.reconnects >= 1,
      'a reopen after the heartbeat ping went unanswered',
    )
    await avail.until(2)
    t.equal(avail.got[1]!.payload, 'offline', 'offline at the heartbeat')
    t.ok(bridge.stats().boards.quiet!.timeouts >= 1, 'the unanswered ping is counted as a timeout')
    // The reopened port stays silent, however often it reopens: never `online` on its own.
    for (let i = 0; i < 3; i++) {
      const reconnects = bridge.stats().boards.quiet!.reconnects
      binding.unplug(path)
      binding.replug(path)
      await waitFor(() => bridge.stats().boards.quiet!.reconnects > reconnects, `reopen ${i + 1} while hung`)
      const timeouts = bridge.stats().boards.quiet!.timeouts
      await waitFor(
        () => bridge.stats().boards.quiet!.timeouts > timeouts,
        `a ping unanswered after reopen ${i + 1}`,
      )
      t.equal(
        bridge.stats().boards.quiet!.state,
        'silent',
        `port open but the board silent after reopen ${i + 1}`,
      )
    }
    t.same(
      avail.got.map((a) => a.payload),
      ['online', 'offline'],
      'no online while hung, whatever the port did',
    )
    // Answering again: the next heartbeat ping is answered and the board is online.
    board.setMute(false)
    await avail.until(3)
    t.equal(avail.got[2]!.payload, 'online', 'online again once it answers a ping')
    t.equal(bridge.stats().boards.quiet!.state, 'online')
    const before = bridge.stats().boards.quiet!.reconnects
    await waitFor(() => board.stats().answered >= 3, 'three heartbeat pings answered')
    t.equal(bridge.stats().boards.quiet!.reconnects, before, 'no reopen while the board answers')
  },
)

t.test('a board missing at start: start() resolves, the bridge keeps trying until it appears', async (t) => {
  const binding = createDeviceBinding()
  const path = '/sim/late-board'
  const board = createSimulatedBoard('late', { rate: 0 })
  binding.attach(path, board)
  binding.unplug(path)
  const published: string[] = []
  const bridge = createBridge({
    boards: [{ name: 'late', port: path, heartbeatMs: 0 }],
    publish: async (topic, payload) => void published.push(`${topic} ${payload}`),
    binding,
    backoff: { initialMs: 1, maxMs: 4 },
  })
  t.teardown(() => bridge.close())
  await bridge.start()
  t.not(bridge.stats().boards.late!.state, 'online')
  t.same(published, [], 'no availability before the port ever opened')
  binding.replug(path)
  await waitFor(() => bridge.stats().boards.late!.state === 'online', 'online once plugged')
  const avail = () => published.filter((p) => p.startsWith('boards/late/availability'))
  await waitFor(() => avail().length === 1, 'online published')
  t.same(avail(), ['boards/late/availability online'])
  t.equal(bridge.stats().boards.late!.reconnects, 0, 'a first open is not a reconnect')
})

t.test('a board that never says anything stays offline, its port kept open and asked again', async (t) => {
  const binding = createDeviceBinding()
  const path = '/sim/mute-from-start'
  let opens = 0
  binding.attach(path, { opened: () => void opens++, received: () => undefined, closed: () => undefined })
  const published: string[] = []
  const bridge = createBridge({
    boards: [{ name: 'mute', port: path, heartbeatMs: 50 }],
    publish: async (topic, payload) => void published.push(`${topic} ${payload}`),
    binding,
    backoff: { initialMs: 1, maxMs: 2 },
  })
  t.teardown(() => bridge.close())
  await bridge.start()
  await waitFor(() => bridge.stats().boards.mute!.timeouts >= 3, 'three unanswered heartbeat pings')
  t.equal(bridge.stats().boards.mute!.state, 'silent', 'the port is open, the board has not answered')
  t.equal(bridge.stats().boards.mute!.reconnects, 0)
  t.equal(opens, 1, 'the port was not reopened')
  t.same(published, [], 'never online: it never answered')
  t.match(await bridge.send('mute', 'ping', {}, { timeoutMs: 20 }), { ok: false, code: 'timeout' })
})
