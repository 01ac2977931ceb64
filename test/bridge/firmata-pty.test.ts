// A Firmata board on a real pty pair (socat): the bridge's own path to real hardware, with
// johnny-five and firmata-io over the real serialport binding, a StandardFirmata played byte for
// byte on the far end. Unplugging (socat killed) must take the board offline at once, and a new
// pty at the same path must bring it back.
import { join } from 'node:path'
import t from 'tap'
import { SerialPort } from 'serialport'
import { runSimulatorOnPort } from '../../boards/simulator/on-port.ts'
import { createBridge, type BoardConfig } from '../../bridge/index.ts'
import { FirmataLink } from '../../bridge/firmata/link.ts'
import { withHangupDetection } from '../../bridge/serial/hangup-binding.ts'
import { tempDir, type Teardown } from '../helpers/tmp.ts'
import { waitFor } from '../helpers/wait.ts'
import { runFirmataDevice, type FirmataDevice } from './firmata-device.ts'
import { noSocat, startPtyPair } from './pty.ts'

/** A Firmata link on the real binding with a short handshake timeout, its warnings and availability kept. */
function watchedLink(t: Teardown, port: string) {
  const warnings: Array<{ msg: string; err?: string }> = []
  const availability: string[] = []
  const link = new FirmataLink(
    {
      name: 'uno1',
      port,
      kind: 'firmata',
      profile: { signals: [{ signal: 'door', type: 'digital', pin: 2 }] },
    },
    {
      log: {
        info: () => undefined,
        warn: (o: { err?: string }, msg?: string) => void warnings.push({ msg: msg ?? '', err: o.err }),
        error: () => undefined,
      },
      now: Date.now,
      backoffInitialMs: 20,
      backoffMaxMs: 50,
      event: () => undefined,
      availability: (_b, state) => void availability.push(state),
      info: () => undefined,
      binding: withHangupDetection(SerialPort.binding),
      handshakeTimeoutMs: 200,
    },
  )
  t.teardown(() => link.close())
  return { link, warnings, availability }
}

t.test('firmata over a pty: handshake, events, commands, unplug and replug', { skip: noSocat }, async (t) => {
  const dir = await tempDir(t)
  let pair = await startPtyPair(dir)
  t.teardown(() => pair.stop())
  let device: FirmataDevice = await runFirmataDevice(pair.board)
  t.teardown(() => device.stop())

  const published: string[] = []
  const board: BoardConfig = {
    name: 'uno1',
    port: pair.hub,
    kind: 'firmata',
    profile: { signals: [{ signal: 'door', type: 'digital', pin: 2 }] },
  }
  const bridge = createBridge({
    boards: [board],
    publish: async (topic, payload) => void published.push(`${topic} ${payload}`),
    backoff: { initialMs: 20, maxMs: 200 },
  })
  t.teardown(() => bridge.close())
  await bridge.start()
  await waitFor(() => bridge.stats().boards.uno1!.state === 'online', 'online after the Firmata handshake')
  await waitFor(() => device.modes.get(2) === 0, 'johnny-five sets the door pin to input')

  device.setDigital(2, 1)
  await waitFor(() => published.includes('boards/uno1/door 1'), 'door open')
  device.setDigital(2, 0)
  await waitFor(() => published.includes('boards/uno1/door 0'), 'door closed')

  t.same(await bridge.send('uno1', 'gpio_write', { pin: 13, value: 1 }), {
    ok: true,
    result: { pin: 13, value: 1 },
  })
  await waitFor(() => device.writes.length > 0, 'the write reaches the board')
  t.same(device.writes, [[13, 1]])
  t.equal(device.modes.get(13), 1, 'pin 13 set to output first')

  await pair.stop()
  await device.closed
  await waitFor(() => bridge.stats().boards.uno1!.state === 'offline', 'offline once the pty hangs up')
  t.same(await bridge.send('uno1', 'ping', {}), {
    ok: false,
    error: 'board uno1 is offline',
    code: 'offline',
  })

  pair = await startPtyPair(dir)
  device = await runFirmataDevice(pair.board)
  await waitFor(() => bridge.stats().boards.uno1!.state === 'online', 'online again after the replug')
  t.equal(bridge.stats().boards.uno1!.reconnects, 1)
  device.setDigital(2, 1)
  await waitFor(
    () => published.filter((p) => p === 'boards/uno1/door 1').length === 2,
    'events after the replug',
  )
  t.same(
    published.filter((p) => p.includes('availability')),
    [
      'boards/uno1/availability online',
      'boards/uno1/availability offline',
      'boards/uno1/availability online',
    ],
  )
})

t.test(
  'a port that does not speak Firmata: handshake timeouts, retries, no crash, then the board',
  { skip: noSocat },
  async (t) => {
    const dir = await tempDir(t)
    const pair = await startPtyPair(dir)
    t.teardown(() => pair.stop())
    // A companion board (JSON lines) where a Firmata board was configured: a plausible mistake.
    const wrong = await runSimulatorOnPort(pair.board, 'vend1', { rate: 50 })
    if (!wrong.ok) throw new Error(wrong.error)

    const { link, warnings, availability } = watchedLink(t, pair.hub)
    await link.start()
    // Each attempt that fails must schedule the next: three timeouts in a row, one offline warning.
    const timeouts = () => warnings.filter((w) => w.msg === 'firmata board error')
    await waitFor(() => timeouts().length >= 3, 'three failed handshakes')
    t.equal(link.stats().state, 'offline')
    t.equal(
      warnings.filter((w) => w.msg === 'firmata board offline; reconnecting').length,
      1,
      'the state change is logged once',
    )
    t.same(
      new Set(timeouts().map((w) => w.err)),
      new Set(['Device or Firmware Error: A timeout occurred while connecting to the Board.']),
      'each timeout is logged once, in one line, not as [object Object]',
    )
    t.same(availability, [], 'never online, so no availability change')

    await wrong.sim.stop()
    const device = await runFirmataDevice(pair.board)
    t.teardown(() => device.stop())
    await waitFor(() => link.stats().state === 'online', 'online once a Firmata board answers')
    t.same(availability, ['online'])
  },
)

t.test(
  'a Firmata port that does not exist yet: open errors retried, no crash, online when it appears',
  { skip: noSocat },
  async (t) => {
    const dir = await tempDir(t)
    const { link, warnings, availability } = watchedLink(t, join(dir, 'hub'))
    await link.start()
    const errors = () => warnings.filter((w) => w.msg === 'firmata board error')
    await waitFor(() => errors().length >= 3, 'three failed opens')
    t.match(errors()[0], { err: /ENOENT|No such file/ }, 'the open error is logged with its cause')
    t.equal(link.stats().state, 'offline')

    const pair = await startPtyPair(dir)
    t.teardown(() => pair.stop())
    const device = await runFirmataDevice(pair.board)
    t.teardown(() => device.stop())
    await waitFor(() => link.stats().state === 'online', 'online once the port exists')
    t.same(availability, ['online'])
  },
)
