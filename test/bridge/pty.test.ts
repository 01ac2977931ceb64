// The real serialport binding on a real pseudo-terminal pair (socat): a simulated board on one
// end, the bridge on the other, a real Aedes broker and mqtt.js subscriber.
import t from 'tap'
import { createBridge } from '../../bridge/index.ts'
import { runSimulatorOnPort } from '../../boards/simulator/on-port.ts'
import { tempDir } from '../helpers/tmp.ts'
import { waitFor } from '../helpers/wait.ts'
import { collect, connectClient, publishVia, startBroker } from './broker.ts'
import { noSocat, startPtyPair } from './pty.ts'

t.test(
  'pty pair: events to MQTT, commands answered, unplug (socat killed) and replug',
  { skip: noSocat },
  async (t) => {
    const dir = await tempDir(t)
    let pair = await startPtyPair(dir)
    t.teardown(() => pair.stop())
    const broker = await startBroker(t)
    const hub = await connectClient(t, broker.url)
    const coins = await collect(await connectClient(t, broker.url), 'boards/vend1/coin')
    const avail = await collect(await connectClient(t, broker.url), 'boards/vend1/availability')

    let sim = await runSimulatorOnPort(pair.board, 'vend1', { rate: 0, text: (n) => `coin-${n}` })
    if (!sim.ok) throw new Error(sim.error)
    const bridge = createBridge({
      // Heartbeat off: only the hangup itself (reads at end of file once socat exits, as when a
      // USB adapter is pulled) can take the board offline. bridge/serial/hangup-binding.ts.
      boards: [{ name: 'vend1', port: pair.hub, heartbeatMs: 0 }],
      publish: publishVia(hub),
      backoff: { initialMs: 20, maxMs: 200 },
    })
    t.teardown(() => bridge.close())
    await bridge.start()
    // Online once the board has answered (its hello, or the ping sent at open), not at open.
    await avail.until(1)
    t.equal(bridge.stats().boards.vend1!.state, 'online')

    sim.sim.board.emitEvents(20)
    await coins.until(20)
    t.same(
      coins.got.map((c) => c.payload),
      Array.from({ length: 20 }, (_, i) => `coin-${i}`),
    )
    t.same(await bridge.send('vend1', 'gpio_write', { pin: 4, value: 1 }), {
      ok: true,
      result: { pin: 4, value: 1 },
    })
    t.same(await bridge.send('vend1', 'capabilities', {}), {
      ok: true,
      result: {
        fw: 'svc-companion/0.2.0',
        commands: ['ping', 'gpio_read', 'gpio_write', 'analog_read', 'capabilities'],
        line_cap: 256,
        pins: 70,
        analog: 16,
      },
    })

    for (let i = 0; i < 3; i++) {
      await pair.stop()
      await sim.sim.closed.catch(() => undefined)
      await waitFor(
        () => bridge.stats().boards.vend1!.state === 'offline',
        `offline after socat ${i + 1} exits`,
      )
      pair = await startPtyPair(dir)
      sim = await runSimulatorOnPort(pair.board, 'vend1', { rate: 0, text: (n) => `again-${i}-${n}` })
      if (!sim.ok) throw new Error(sim.error)
      await waitFor(() => bridge.stats().boards.vend1!.state === 'online', `online after replug ${i + 1}`)
      sim.sim.board.emitEvents(1)
      await coins.until(21 + i)
      t.equal(coins.got[20 + i]!.payload, `again-${i}-0`, `events flow after replug ${i + 1}`)
    }
    t.equal(bridge.stats().boards.vend1!.reconnects, 3)
    await avail.until(7)
    t.same(
      avail.got.map((a) => a.payload),
      ['online', 'offline', 'online', 'offline', 'online', 'offline', 'online'],
    )
    await sim.sim.stop()
  },
)
