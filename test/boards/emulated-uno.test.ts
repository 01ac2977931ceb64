// The companion firmware on an emulated ATmega328P: built for an Uno with avr-gcc against Debian's
// Arduino core, run in simavr with UART0 on a pseudo-terminal, and driven through the real bridge
// (serialport on the pty) publishing to a real Aedes broker on loopback.
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { SerialPort } from 'serialport'
import t from 'tap'
import {
  buildHarness,
  type EmulatedUno,
  emulatedUnoMissing,
  startEmulatedUno,
} from '../../boards/firmware/simavr/emulated-uno.ts'
import { buildUno, UNO_FLASH_MAX, UNO_STATIC_RAM_MAX } from '../../boards/firmware/uno-build.ts'
import { type Bridge, createBridge } from '../../bridge/index.ts'
import { collect, connectClient, publishVia, startBroker } from '../bridge/broker.ts'
import { tempDir } from '../helpers/tmp.ts'
import { waitFor } from '../helpers/wait.ts'

const missing = emulatedUnoMissing()
if (missing) t.comment(`emulated Uno skipped: ${missing}`)
const skip = missing ? `${missing}: the emulated-Uno test needs it` : false

// A heartbeat short enough to see a frozen board go offline within a few seconds, long enough
// that a busy CI host running the emulator below real time is not taken for a hung board.
const HEARTBEAT_MS = 1000

t.test('companion firmware on an emulated Uno, through the real bridge and broker', { skip }, async (t) => {
  const dir = await tempDir(t)
  const built = await buildUno(join(dir, 'build'))
  if (!built.ok) throw new Error(built.error)
  const { elf, flash, ram } = built.build
  t.ok(flash <= UNO_FLASH_MAX, `flash ${flash} B fits the Uno's ${UNO_FLASH_MAX} B`)
  t.ok(ram <= UNO_STATIC_RAM_MAX, `static RAM ${ram} B within ${UNO_STATIC_RAM_MAX} B`)
  const harness = await buildHarness(dir)
  if (!harness.ok) throw new Error(harness.error)

  const link = join(dir, 'uno')
  let uno: EmulatedUno = await startEmulatedUno({ harness: harness.exe, elf, link, paused: true })
  t.teardown(() => uno.kill())
  const broker = await startBroker(t)
  const hub = await connectClient(t, broker.url)
  const coins = await collect(await connectClient(t, broker.url), 'boards/vend1/coin')
  const avail = await collect(await connectClient(t, broker.url), 'boards/vend1/availability')
  const lastAvailability = () => avail.got.at(-1)?.payload

  let bridge: Bridge | undefined
  const startBridge = async (): Promise<Bridge> => {
    const b = createBridge({
      boards: [{ name: 'vend1', port: link, heartbeatMs: HEARTBEAT_MS }],
      publish: publishVia(hub),
      backoff: { initialMs: 20, maxMs: 200 },
    })
    bridge = b
    await b.start()
    return b
  }
  t.teardown(() => bridge?.close())
  const state = () => bridge?.stats().boards.vend1?.state

  // The port is open before the MCU leaves reset, so its hello is heard, as on a real Uno that
  // resets when the port opens.
  let b = await startBridge()
  await uno.ask('run', 'running')
  await waitFor(() => b.stats().boards.vend1?.hello === 'vend1', 'the firmware says hello')
  await waitFor(() => lastAvailability() === 'online', 'online')

  t.test('a pulse on the coin pin is an event on boards/vend1/coin', async (t) => {
    await uno.ask('pulse 2 20', 'pulse 2')
    await coins.until(1)
    t.same(
      coins.got.map((c) => c.payload),
      ['{"slot":"A1","amount":1}'],
    )
  })

  t.test('ping, capabilities, gpio_write on the emulated pin, gpio_read', async (t) => {
    t.same(await b.send('vend1', 'ping', {}), { ok: true, result: 'pong' })
    t.same(await b.send('vend1', 'capabilities', {}), {
      ok: true,
      result: {
        fw: 'svc-companion/0.2.0',
        commands: ['ping', 'gpio_read', 'gpio_write', 'analog_read', 'capabilities'],
        line_cap: 256,
        pins: 20,
        analog: 6,
      },
    })
    t.same(await b.send('vend1', 'gpio_write', { pin: 13, value: 1 }), {
      ok: true,
      result: { pin: 13, value: 1 },
    })
    t.equal(await uno.ask('read 13', 'read 13'), 'read 13 ddr=1 port=1', 'PB5 is an output, driven high')
    t.same(await b.send('vend1', 'gpio_read', { pin: 13 }), { ok: true, result: { pin: 13, value: 1 } })
    t.same(await b.send('vend1', 'gpio_write', { pin: 13, value: 0 }), {
      ok: true,
      result: { pin: 13, value: 0 },
    })
    t.equal(await uno.ask('read 13', 'read 13'), 'read 13 ddr=1 port=0', 'PB5 driven low')
    t.same(await b.send('vend1', 'gpio_read', { pin: 13 }), { ok: true, result: { pin: 13, value: 0 } })
    // t.has: the bridge may add fields of its own to a failed result (a code, the board).
    t.has(
      await b.send('vend1', 'gpio_write', { pin: 2, value: 0 }),
      { ok: false, error: 'args.pin: used by the firmware itself' },
      'the coin input is refused to gpio_write',
    )
    t.equal(
      await uno.ask('read 2', 'read 2'),
      'read 2 ddr=0 port=1',
      'the coin input is still an input with its pull-up',
    )
  })

  t.test('analog_read reads the emulated ADC', async (t) => {
    // 2.5 V and 1 V against the 5 V reference: 1023 × 0.5 and × 0.2, as the ADC truncates.
    await uno.ask('adc 0 2500', 'adc 0')
    await uno.ask('adc 5 1000', 'adc 5')
    t.same(await b.send('vend1', 'analog_read', { pin: 0 }), { ok: true, result: { pin: 0, value: 511 } })
    t.same(await b.send('vend1', 'analog_read', { pin: 5 }), { ok: true, result: { pin: 5, value: 204 } })
    t.has(
      await b.send('vend1', 'analog_read', { pin: 6 }),
      { ok: false, error: 'args.pin: must be an analog input from 0 to 5' },
      'the Uno has A0 to A5',
    )
  })

  t.test('every pin from 0 to 255 works or is refused, and the MCU never halts', async (t) => {
    const readable: number[] = []
    const writable: number[] = []
    const analog: number[] = []
    const wrong: string[] = []
    for (let pin = 0; pin <= 255; pin++) {
      const a = await b.send('vend1', 'analog_read', { pin })
      if (a.ok) analog.push(pin)
      else if (!/^args\.pin: /.test(a.error)) wrong.push(`analog ${pin}: ${a.error}`)
      const r = await b.send('vend1', 'gpio_read', { pin })
      if (r.ok) readable.push(pin)
      else if (!/^args\.pin: /.test(r.error)) wrong.push(`read ${pin}: ${r.error}`)
      const w = await b.send('vend1', 'gpio_write', { pin, value: 0 })
      if (w.ok) writable.push(pin)
      else if (!/^args\.pin: /.test(w.error)) wrong.push(`write ${pin}: ${w.error}`)
    }
    t.same(wrong, [], 'every refusal is an args.pin error')
    t.same(
      readable,
      Array.from({ length: 20 }, (_, i) => i),
      'the Uno has pins 0 to 19',
    )
    t.same(
      writable,
      Array.from({ length: 17 }, (_, i) => i + 3),
      'writes refused on the serial pins and the coin input',
    )
    t.same(analog, [0, 1, 2, 3, 4, 5], 'analog inputs A0 to A5')
    t.same(uno.halts, [], 'no halt reported')
    t.match(await uno.ask('state', 'state'), /^state running /, 'the MCU still runs')
    t.same(await b.send('vend1', 'ping', {}), { ok: true, result: 'pong' }, 'and still answers')
    t.equal(coins.got.length, 1, 'no coin event from all that')
  })

  t.test('commands sent back to back are all answered', async (t) => {
    // The bridge sends one command at a time, so the port is taken from it for this: every line
    // in one write, at line speed. The two 142-byte replies keep the UART's 64-byte transmit
    // buffer full for some 200 byte-times while the 220-byte third command arrives: more than its
    // 64-byte receive buffer holds unless the firmware reads while it waits to write.
    await b.close()
    const port = new SerialPort({ path: link, baudRate: 115200, autoOpen: false })
    await new Promise<void>((resolve, reject) => port.open((err) => (err ? reject(err) : resolve())))
    let got = ''
    port.on('data', (d: Buffer) => {
      got += d.toString('utf8')
    })
    const commands = [
      { id: 1, cmd: 'capabilities', args: {} },
      { id: 2, cmd: 'capabilities', args: {} },
      { id: 3, cmd: 'gpio_write', args: { pin: 13, value: 1, note: 'x'.repeat(160) } },
      { id: 4, cmd: 'ping', args: {} },
    ]
    port.write(commands.map((c) => `${JSON.stringify(c)}\n`).join(''))
    // Complete lines only; no heartbeat ping can interleave, the bridge is closed.
    const lines = () => got.split('\n').slice(0, -1)
    await waitFor(() => lines().length >= commands.length, 'a reply to every command')
    await new Promise<void>((r) => port.close(() => r()))
    const replies = lines().map((l) => JSON.parse(l) as { id: number; ok: boolean; result?: unknown })
    t.same(
      replies.map((r) => [r.id, r.ok]),
      commands.map((c) => [c.id, true]),
      'every command answered, in order, none garbled',
    )
    t.same(replies[2]!.result, { pin: 13, value: 1 })
    t.equal(await uno.ask('read 13', 'read 13'), 'read 13 ddr=1 port=1', 'the long command ran')
  })

  t.test('a frozen emulator goes offline and stays offline until it runs again', async (t) => {
    b = await startBridge()
    await waitFor(() => state() === 'online' && lastAvailability() === 'online', 'online again')
    t.same(await b.send('vend1', 'ping', {}), { ok: true, result: 'pong' })
    const before = avail.got.length
    uno.freeze()
    await waitFor(() => lastAvailability() === 'offline', 'offline while frozen')
    // However often the port is reopened, a board that answers nothing is not online: watch
    // for three heartbeat periods.
    const onlineSeen: string[] = []
    for (let i = 0; i < (3 * HEARTBEAT_MS) / 50; i++) {
      await sleep(50)
      if (state() === 'online') onlineSeen.push(`state online after ${i * 50} ms`)
    }
    t.same(
      avail.got.slice(before).map((a) => a.payload),
      ['offline'],
      'only offline published while frozen',
    )
    t.same(onlineSeen, [], 'the bridge never held it online while frozen')
    uno.thaw()
    await waitFor(() => lastAvailability() === 'online' && state() === 'online', 'online after SIGCONT')
    t.same(await b.send('vend1', 'ping', {}), { ok: true, result: 'pong' })
  })

  t.test('killed and restarted: offline, then online, and events flow again', async (t) => {
    await uno.kill()
    await waitFor(() => lastAvailability() === 'offline' && state() !== 'online', 'offline after kill')
    const harnessExe = harness.exe
    uno = await startEmulatedUno({ harness: harnessExe, elf, link })
    await waitFor(() => lastAvailability() === 'online' && state() === 'online', 'online after restart')
    t.same(await b.send('vend1', 'ping', {}), { ok: true, result: 'pong' })
    await uno.ask('pulse 2 20', 'pulse 2')
    await coins.until(2)
    t.equal(coins.got[1]!.payload, '{"slot":"A1","amount":1}')
    t.same(uno.halts, [])
  })
})
