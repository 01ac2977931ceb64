// The firmware identity a board names in its hello, through the real serialport binding on a
// socat pty pair to a real Aedes broker: name, version and protocol in the board's stats and its
// retained boards/<b>/info; a board that speaks another protocol is warned about once per version
// and keeps working; a hello whose protocol is unreadable is refused with a clear error, and
// nothing crashes.
import t from 'tap'
import { runSimulatorOnPort } from '../../boards/simulator/on-port.ts'
import { SUPPORTED_PROTOCOLS } from '../../bridge/codec/index.ts'
import { createBridge } from '../../bridge/index.ts'
import { tempDir } from '../helpers/tmp.ts'
import { waitFor } from '../helpers/wait.ts'
import { collect, connectClient, publishVia, startBroker } from './broker.ts'
import { noSocat, startPtyPair } from './pty.ts'

interface Line {
  level: 'info' | 'warn' | 'error'
  fields: Record<string, unknown>
  msg: string
}

t.test('hello identity over a pty: stats, info, other protocols, bad ones', { skip: noSocat }, async (t) => {
  const dir = await tempDir(t)
  const pair = await startPtyPair(dir)
  t.teardown(() => pair.stop())
  const broker = await startBroker(t)
  const hub = await connectClient(t, broker.url)
  const infos = await collect(await connectClient(t, broker.url), 'boards/vend1/info')
  const coins = await collect(await connectClient(t, broker.url), 'boards/vend1/coin')
  const lines: Line[] = []
  const rec =
    (level: Line['level']) =>
    (fields: object | string, msg?: string): void =>
      void lines.push({ level, fields: fields as Record<string, unknown>, msg: msg ?? '' })
  const protocolWarnings = () => lines.filter((l) => l.level === 'warn' && /speaks line protocol/.test(l.msg))

  const sim = await runSimulatorOnPort(pair.board, 'vend1', { rate: 0, text: (n) => `coin-${n}` })
  if (!sim.ok) throw new Error(sim.error)
  t.teardown(() => sim.sim.stop())
  const board = sim.sim.board
  const bridge = createBridge({
    boards: [{ name: 'vend1', port: pair.hub, heartbeatMs: 0 }],
    publish: publishVia(hub),
    log: { info: rec('info'), warn: rec('warn'), error: rec('error') },
    backoff: { initialMs: 20, maxMs: 200 },
    // Every bad line logged as it comes, so each refusal below can be read.
    warnIntervalMs: 0,
  })
  t.teardown(() => bridge.close())
  await bridge.start()
  // The simulator said its hello before the bridge opened the port (lost, as on a real tty); it
  // answers the ping sent at open.
  await waitFor(() => bridge.stats().boards.vend1?.state === 'online', 'online')
  const stats = () => bridge.stats().boards.vend1!
  const infoCount = () => infos.got.length
  // The info a hello published: the first since `n` with its fw. An info of the hello before may
  // still arrive after `n` was read (the bridge publishes one per hello it reads), so the index
  // alone does not say which hello a message is from.
  const infoFrom = async (n: number, fw: string): Promise<Record<string, unknown>> => {
    const parsed = () => infos.got.slice(n).map((m) => JSON.parse(m.payload) as Record<string, unknown>)
    await waitFor(() => parsed().some((i) => i.fw === fw), `an info with fw ${fw}`)
    return parsed().find((i) => i.fw === fw)!
  }
  const hello = async (line: string): Promise<void> => {
    const hellos = stats().hellos
    const garbage = stats().garbage
    board.emitRaw(`${line}\n`)
    await waitFor(() => stats().hellos > hellos || stats().garbage > garbage, `the bridge read ${line}`)
  }

  t.test('a companion hello: name, fw, version and protocol', async (t) => {
    const n = infoCount()
    await hello('{"event":"hello","board":"vend1","fw":"svc-companion/0.2.0","proto":1}')
    t.match(await infoFrom(n, 'svc-companion/0.2.0'), {
      name: 'vend1',
      fw: 'svc-companion/0.2.0',
      version: '0.2.0',
      proto: 1,
      at: /^\d{4}-/,
    })
    t.match(stats(), { hello: 'vend1', fw: 'svc-companion/0.2.0', version: '0.2.0', proto: 1 })
    t.same(protocolWarnings(), [], 'a protocol the hub speaks: no warning')
  })

  t.test('a hello without proto is protocol 1 (a board from before the field)', async (t) => {
    const n = infoCount()
    await hello('{"event":"hello","board":"vend1","fw":"svc-companion/0.1.0"}')
    t.match(await infoFrom(n, 'svc-companion/0.1.0'), {
      fw: 'svc-companion/0.1.0',
      version: '0.1.0',
      proto: 1,
    })
    t.match(stats(), { version: '0.1.0', proto: 1 })
    t.same(protocolWarnings(), [])
  })

  t.test('protocol 2: warned once per version, and the board keeps working', async (t) => {
    const n = infoCount()
    await hello('{"event":"hello","board":"vend1","fw":"svc-companion/0.3.0","proto":2}')
    t.match(await infoFrom(n, 'svc-companion/0.3.0'), {
      fw: 'svc-companion/0.3.0',
      version: '0.3.0',
      proto: 2,
    })
    t.match(stats(), { state: 'online', version: '0.3.0', proto: 2 })
    const warned = protocolWarnings()
    t.equal(warned.length, 1, 'one warning')
    t.match(warned[0], {
      fields: { board: 'vend1', proto: 2, supported: [...SUPPORTED_PROTOCOLS], fw: 'svc-companion/0.3.0' },
      msg: `board vend1 speaks line protocol 2, this hub speaks ${SUPPORTED_PROTOCOLS.join(', ')}: it is used as far as the two agree`,
    })

    // It restarts, twice, still on protocol 2: nothing more in the log.
    await hello('{"event":"hello","board":"vend1","fw":"svc-companion/0.3.0","proto":2}')
    await hello('{"event":"hello","board":"vend1","fw":"svc-companion/0.3.1","proto":2}')
    t.equal(protocolWarnings().length, 1, 'the same version is not warned about again')
    t.same(await bridge.send('vend1', 'ping', {}), { ok: true, result: 'pong' }, 'commands still run')
    board.emitEvents(2)
    await coins.until(2)
    t.same(
      coins.got.map((c) => c.payload),
      ['coin-0', 'coin-1'],
      'events still published',
    )

    await hello('{"event":"hello","board":"vend1","fw":"svc-companion/0.4.0","proto":3}')
    t.equal(protocolWarnings().length, 2, 'another version: warned about once more')
    t.match(protocolWarnings()[1], { fields: { board: 'vend1', proto: 3 }, msg: /speaks line protocol 3/ })
    await hello('{"event":"hello","board":"vend1","fw":"svc-companion/0.2.0","proto":1}')
    t.equal(protocolWarnings().length, 2, 'back on a protocol the hub speaks: no warning')
    t.match(stats(), { version: '0.2.0', proto: 1 })
    // The info of that last hello is published after the bridge counted it: waited for here, so
    // the next test does not count it as its own (a fresh-clone CI run once did).
    await waitFor(
      () => (infos.got.at(-1)?.payload ?? '').includes('"fw":"svc-companion/0.2.0"'),
      'the last hello info to arrive',
    )
  })

  t.test('a hello whose protocol is unreadable: a clear error, nothing else changes', async (t) => {
    const before = stats()
    const n = infoCount()
    const bad: Array<[string, string]> = [
      ['"2"', 'got "2"'],
      ['-1', 'got -1'],
      ['0', 'got 0'],
      ['1.5', 'got 1.5'],
      ['99999999999999999999999', 'got 1e+23'],
      ['null', 'got null'],
      ['{"v":2}', 'got {"v":2}'],
    ]
    for (const [proto] of bad)
      await hello(`{"event":"hello","board":"vend1","fw":"svc-companion/9.9.9","proto":${proto}}`)
    const refused = lines.filter((l) => l.level === 'warn' && l.msg === 'bad line from board ignored')
    t.equal(refused.length, bad.length, 'each one logged')
    for (const [i, [, got]] of bad.entries())
      t.match(refused[i]!.fields, {
        board: 'vend1',
        error: `hello: /proto must be an integer from 1 to 255 (the board's line protocol version), ${got}`,
      })
    t.match(stats(), {
      state: 'online',
      hellos: before.hellos,
      garbage: before.garbage + bad.length,
      version: before.version,
      proto: before.proto,
    })
    t.same(await bridge.send('vend1', 'ping', {}), { ok: true, result: 'pong' }, 'the board still answers')
    t.equal(infoCount(), n, 'no info published for a refused hello')
    t.same(
      lines.filter((l) => l.level === 'error'),
      [],
      'nothing logged as an error',
    )
  })

  t.test('a hello whose fw is not name/version: no version, still a hello', async (t) => {
    const n = infoCount()
    await hello('{"event":"hello","board":"vend1","fw":"my sketch","proto":1}')
    t.match(await infoFrom(n, 'my sketch'), { fw: 'my sketch', version: null, proto: 1 })
    t.equal(stats().version, undefined)
  })
})
