// Availability that is true, on the real serialport binding and a real pty pair (socat): a board
// is `online` only once it has answered since its port opened. A hung board (port open, nothing
// answers: the simulator's `mute`) goes `offline` at the heartbeat and stays offline across
// every reopen until it answers again.
import t from 'tap'
import { createBridge } from '../../bridge/index.ts'
import { runSimulatorOnPort } from '../../boards/simulator/on-port.ts'
import { tempDir } from '../helpers/tmp.ts'
import { waitFor } from '../helpers/wait.ts'
import { collect, connectClient, publishVia, startBroker } from './broker.ts'
import { noSocat, startPtyPair } from './pty.ts'

t.test('a hung board on a pty never reads online until it answers', { skip: noSocat }, async (t) => {
  const dir = await tempDir(t)
  let pair = await startPtyPair(dir)
  t.teardown(() => pair.stop())
  const broker = await startBroker(t)
  const hub = await connectClient(t, broker.url)
  const avail = await collect(await connectClient(t, broker.url), 'boards/vend1/availability')

  // Hung from the start: the port opens, nothing ever answers.
  let sim = await runSimulatorOnPort(pair.board, 'vend1', { rate: 0, mute: true })
  if (!sim.ok) throw new Error(sim.error)
  const bridge = createBridge({
    boards: [{ name: 'vend1', port: pair.hub, heartbeatMs: 100 }],
    publish: publishVia(hub),
    backoff: { initialMs: 20, maxMs: 100 },
  })
  t.teardown(() => bridge.close())
  await bridge.start()
  await waitFor(() => bridge.stats().boards.vend1!.timeouts >= 2, 'two pings unanswered')
  t.equal(bridge.stats().boards.vend1!.state, 'silent', 'port open, board silent')
  t.same(avail.got, [], 'no online for an open port alone')

  // The board comes to: the next heartbeat ping is answered.
  sim.sim.board.setMute(false)
  await avail.until(1)
  t.equal(avail.got[0]!.payload, 'online')

  // It hangs again: offline at the heartbeat, the port reopened, and still offline after that.
  sim.sim.board.setMute(true)
  await avail.until(2)
  t.equal(avail.got[1]!.payload, 'offline', 'offline at the heartbeat')
  await waitFor(() => bridge.stats().boards.vend1!.reconnects >= 1, 'the port reopened')
  const timeouts = bridge.stats().boards.vend1!.timeouts
  await waitFor(() => bridge.stats().boards.vend1!.timeouts >= timeouts + 2, 'pings after the reopen')
  t.equal(bridge.stats().boards.vend1!.state, 'silent')

  // Unplugged and plugged back while still hung (socat killed, a new pair at the same path).
  await pair.stop()
  await sim.sim.closed.catch(() => undefined)
  await waitFor(() => bridge.stats().boards.vend1!.state === 'offline', 'port lost')
  pair = await startPtyPair(dir)
  sim = await runSimulatorOnPort(pair.board, 'vend1', { rate: 0, mute: true })
  if (!sim.ok) throw new Error(sim.error)
  await waitFor(() => bridge.stats().boards.vend1!.state === 'silent', 'port open again')
  const after = bridge.stats().boards.vend1!.timeouts
  await waitFor(() => bridge.stats().boards.vend1!.timeouts >= after + 1, 'a ping unanswered after replug')
  t.same(
    avail.got.map((a) => a.payload),
    ['online', 'offline'],
    'offline through every reopen while hung',
  )

  sim.sim.board.setMute(false)
  await avail.until(3)
  t.equal(avail.got[2]!.payload, 'online', 'online again once it answers')
  await sim.sim.stop()
})
