// The bridge hands a board's port over for a firmware flash and takes it back: a real socat pty
// pair, the real serialport binding, a simulated companion board on the far end, a real Aedes
// broker. While released the port is really free (another program opens it with its lock and
// talks to the board), the board reads `updating`, commands are refused, and nothing reopens it.
import { setTimeout as sleep } from 'node:timers/promises'
import { SerialPort } from 'serialport'
import t from 'tap'
import { runSimulatorOnPort } from '../../boards/simulator/on-port.ts'
import { createBridge, type HelloInfo, type Log } from '../../bridge/index.ts'
import { collect, connectClient, publishVia, startBroker } from '../bridge/broker.ts'
import { noSocat, startPtyPair } from '../bridge/pty.ts'
import { tempDir } from '../helpers/tmp.ts'
import { waitFor } from '../helpers/wait.ts'

function recorder(): Log & { lines: { level: string; msg: string }[] } {
  const lines: { level: string; msg: string }[] = []
  const at = (level: string) => (o: object | string, msg?: string) =>
    void lines.push({ level, msg: typeof o === 'string' ? o : (msg ?? '') })
  return { lines, info: at('info'), warn: at('warn'), error: at('error') }
}

/** Opens `path` as another program would (serialport's exclusive lock), says `line`, reads the answer. */
async function talkDirectly(path: string, line: string): Promise<string> {
  const port = new SerialPort({ path, baudRate: 115200, autoOpen: false })
  await new Promise<void>((resolve, reject) => port.open((err) => (err ? reject(err) : resolve())))
  try {
    let got = ''
    port.on('data', (b: Buffer) => {
      got += b.toString('utf8')
    })
    port.write(line)
    return await waitFor(() => got.split('\n').find((l) => l.includes('"id":99')), 'the board to answer')
  } finally {
    await new Promise<void>((r) => port.close(() => r()))
  }
}

t.test('release and reclaim a serial board on a real pty', { skip: noSocat }, async (t) => {
  const dir = await tempDir(t)
  const pair = await startPtyPair(dir)
  t.teardown(() => pair.stop())
  const broker = await startBroker(t)
  const hub = await connectClient(t, broker.url)
  const coins = await collect(await connectClient(t, broker.url), 'boards/vend1/coin')
  const avail = await collect(await connectClient(t, broker.url), 'boards/vend1/availability')
  const sim = await runSimulatorOnPort(pair.board, 'vend1', { rate: 0, text: (n) => `coin-${n}` })
  if (!sim.ok) throw new Error(sim.error)
  t.teardown(() => sim.sim.stop())
  const log = recorder()
  const bridge = createBridge({
    boards: [{ name: 'vend1', port: pair.hub, heartbeatMs: 200 }],
    publish: publishVia(hub),
    log,
    backoff: { initialMs: 20, maxMs: 100 },
  })
  t.teardown(() => bridge.close())
  const hellos: [string, HelloInfo][] = []
  const unsubscribe = bridge.onHello((board, info) => hellos.push([board, info]))
  await bridge.start()
  await waitFor(() => bridge.stats().boards.vend1!.state === 'online', 'vend1 online')
  await avail.until(1)
  const state = () => bridge.stats().boards.vend1!.state

  t.same(await bridge.reclaim('vend1'), {
    ok: false,
    error: 'board vend1: its port was not handed over',
    code: 'not_released',
  })
  t.match(await bridge.release('nope'), { ok: false, code: 'unknown_board', error: /unknown board "nope"/ })

  t.same(await bridge.release('vend1'), { ok: true, port: pair.hub }, 'released, with the port path')
  t.equal(state(), 'updating')
  await avail.until(2)
  t.equal(avail.got[1]!.payload, 'offline', 'availability offline once released')
  t.match(await bridge.release('vend1'), { ok: false, code: 'updating' }, 'a second release is refused')
  t.same(await bridge.send('vend1', 'ping', {}), {
    ok: false,
    error: 'board vend1 is updating (its firmware is being flashed); try again once it is back online',
    code: 'updating',
  })

  // The port is free: another program opens it with serialport's exclusive lock and the board
  // answers it (which is what avrdude needs).
  const answer = await talkDirectly(pair.hub, '{"id":99,"cmd":"ping","args":{}}\n')
  t.same(JSON.parse(answer), { id: 99, ok: true, result: 'pong' })
  // Longer than the heartbeat and several backoff periods: a bridge that still tried would have
  // reopened the free port (and gone online) or logged a failed open by now.
  await sleep(600)
  t.equal(state(), 'updating', 'still updating: no reopen, no heartbeat')
  t.notOk(
    log.lines.some((l) => /cannot open|heartbeat/.test(l.msg)),
    'no open attempt or heartbeat while released',
  )
  t.equal(bridge.stats().boards.vend1!.reconnects, 0)

  const reclaimed = await bridge.reclaim('vend1')
  t.same(reclaimed, { ok: true, port: pair.hub })
  await waitFor(() => state() === 'online', 'online again after reclaim')
  t.equal(bridge.stats().boards.vend1!.reconnects, 0, 'a reclaim is not counted as a reconnect')
  await avail.until(3)
  t.equal(avail.got[2]!.payload, 'online')
  t.same(await bridge.send('vend1', 'ping', {}), { ok: true, result: 'pong' })
  sim.sim.board.emitEvents(3)
  await coins.until(3)
  t.same(
    coins.got.map((c) => c.payload),
    ['coin-0', 'coin-1', 'coin-2'],
    'events flow again',
  )

  // A hello (what a board says after it restarts) reaches every listener with its fields.
  const before = hellos.length
  sim.sim.board.emitRaw('{"event":"hello","board":"vend1","fw":"svc-companion/9.9.9","proto":2}\n')
  await waitFor(() => hellos.length > before, 'the hello reaches the listener')
  t.match(hellos.at(-1), ['vend1', { name: 'vend1', fw: 'svc-companion/9.9.9', proto: 2 }])
  unsubscribe()
  sim.sim.board.emitRaw('{"event":"hello","board":"vend1","fw":"svc-companion/9.9.9"}\n')
  await waitFor(() => bridge.stats().boards.vend1!.hellos >= 2, 'the second hello counted')
  t.equal(hellos.length, before + 1, 'no call after unsubscribe')
})

t.test(
  'a command waiting when the port is released fails with code updating',
  { skip: noSocat },
  async (t) => {
    const dir = await tempDir(t)
    const pair = await startPtyPair(dir)
    t.teardown(() => pair.stop())
    const sim = await runSimulatorOnPort(pair.board, 'vend1', { rate: 0, mute: true })
    if (!sim.ok) throw new Error(sim.error)
    t.teardown(() => sim.sim.stop())
    const bridge = createBridge({
      boards: [{ name: 'vend1', port: pair.hub, heartbeatMs: 0 }],
      publish: async () => undefined,
      commandTimeoutMs: 60_000,
    })
    t.teardown(() => bridge.close())
    await bridge.start()
    t.equal(bridge.stats().boards.vend1!.state, 'silent', 'port open, the mute board has not answered')
    const waiting = bridge.send('vend1', 'ping', {}, { timeoutMs: 60_000 })
    t.ok((await bridge.release('vend1')).ok)
    t.same(await waiting, {
      ok: false,
      error: 'board vend1: updating (its firmware is being flashed)',
      code: 'updating',
    })
    // Closing the bridge while released leaves it closed, with nothing to reclaim.
    await bridge.close()
    t.equal(bridge.stats().boards.vend1!.state, 'closed')
    t.match(await bridge.reclaim('vend1'), { ok: false, code: 'closed' })
  },
)

t.test('a Firmata board refuses the handover', async (t) => {
  const bridge = createBridge({
    boards: [
      {
        name: 'uno1',
        port: '/dev/null-firmata-never-opened',
        kind: 'firmata',
        profile: { signals: [{ signal: 'door', type: 'digital', pin: 2 }] },
      },
    ],
    publish: async () => undefined,
  })
  t.teardown(() => bridge.close())
  t.match(await bridge.release('uno1'), {
    ok: false,
    code: 'unsupported',
    error: /uno1 is a Firmata board: its port cannot be handed over/,
  })
})
