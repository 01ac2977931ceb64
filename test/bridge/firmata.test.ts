// Firmata boards through johnny-five, driven by mock-firmata at the hardware edge: the profile
// turns pin changes into the same `boards/<board>/<signal>` events, with thresholds and intervals.
import t from 'tap'
import { createRequire } from 'node:module'
import { createBridge, type BoardConfig, type FirmataIo } from '../../bridge/index.ts'
import { checkBoardConfigs } from '../../bridge/config.ts'
import { waitFor } from '../helpers/wait.ts'

const require = createRequire(import.meta.url)
const { Firmata: MockFirmata } = require('mock-firmata') as {
  Firmata: new () => FirmataIo & { emit(ev: string, ...a: unknown[]): boolean }
}

type Cb = (v: number) => void
interface Driven {
  io: FirmataIo & { emit(ev: string, ...a: unknown[]): boolean }
  analog: Map<number, Cb>
  digital: Map<number, Cb>
  writes: Array<[number, number]>
}

function mockIo(): Driven {
  const io = new MockFirmata()
  const d: Driven = { io, analog: new Map(), digital: new Map(), writes: [] }
  // mock-firmata's reads are no-ops; capture the callbacks johnny-five registers so the test can play the pins.
  Object.assign(io, {
    analogRead: (pin: number, cb: Cb) => void d.analog.set(pin, cb),
    digitalRead: (pin: number, cb: Cb) => void d.digital.set(pin, cb),
    digitalWrite: (pin: number, v: number) => {
      d.writes.push([pin, v])
      const p = io.pins[pin]
      if (p) p.value = v
    },
  })
  return d
}

const profileBoard: BoardConfig = {
  name: 'uno1',
  port: '/dev/firmata-mock',
  kind: 'firmata',
  profile: {
    signals: [
      { signal: 'temp', type: 'analog', pin: 'A0', threshold: 5, intervalMs: 20 },
      { signal: 'door', type: 'digital', pin: 2 },
      { signal: 'button', type: 'digital', pin: 3, invert: true },
    ],
  },
}

t.test('profile signals become events; commands answered; close → offline → reconnect', async (t) => {
  const ios: Driven[] = []
  const published: string[] = []
  const bridge = createBridge({
    boards: [profileBoard],
    publish: async (topic, payload) => void published.push(`${topic} ${payload}`),
    firmataIo: () => {
      const d = mockIo()
      ios.push(d)
      // The IO becomes ready on the next turn, as a real board does after its handshake.
      setImmediate(() => {
        d.io.emit('connect')
        d.io.emit('ready')
      })
      return d.io
    },
    backoff: { initialMs: 5, maxMs: 20 },
  })
  t.teardown(() => bridge.close())
  await bridge.start()
  t.equal(bridge.stats().boards.uno1!.state, 'online')
  t.equal(published.length, 2)
  t.match(published[0], /^boards\/uno1\/info \{"name":"uno1","fw":"firmata","pins":\d+,"at":"/)
  t.equal(published[1], 'boards/uno1/availability online', 'online after the handshake')
  const d = ios[0]!
  t.ok(d.analog.size === 1 && d.digital.size === 2, 'johnny-five reads one analog and two digital pins')

  const analog = [...d.analog.values()][0]!
  const door = d.digital.get(2)!
  const button = d.digital.get(3)!
  analog(100)
  await waitFor(() => published.includes('boards/uno1/temp 100'), 'first analog value')
  analog(103) // below the threshold of 5: no event
  await new Promise((r) => setTimeout(r, 80)) // several 20 ms intervals pass
  analog(111)
  await waitFor(() => published.includes('boards/uno1/temp 111'), 'a change past the threshold')
  t.notOk(published.includes('boards/uno1/temp 103'), 'the change under the threshold was filtered')
  door(1)
  await waitFor(() => published.includes('boards/uno1/door 1'), 'door open')
  door(0)
  await waitFor(() => published.includes('boards/uno1/door 0'), 'door closed')
  button(0)
  await waitFor(() => published.includes('boards/uno1/button 1'), 'inverted: LOW reports 1')

  t.same(await bridge.send('uno1', 'ping', {}), { ok: true, result: 'pong' })
  t.same(await bridge.send('uno1', 'gpio_write', { pin: 13, value: 1 }), {
    ok: true,
    result: { pin: 13, value: 1 },
  })
  t.same(d.writes, [[13, 1]])
  t.same(await bridge.send('uno1', 'gpio_read', { pin: 13 }), { ok: true, result: { pin: 13, value: 1 } })
  t.match(await bridge.send('uno1', 'gpio_write', { pin: 13, value: 2 }), {
    ok: false,
    error: 'args.value: must be 0 or 1',
  })
  t.match(await bridge.send('uno1', 'gpio_read', { pin: 500 }), {
    ok: false,
    error: /^args\.pin: must be an integer from 0 to \d+$/,
  })
  t.match(await bridge.send('uno1', 'reboot', {}), { ok: false, error: /unknown command "reboot"/ })

  d.io.emit('close')
  await waitFor(
    () => ios.length === 2 && bridge.stats().boards.uno1!.state === 'online',
    'reconnected with a new IO',
  )
  t.equal(bridge.stats().boards.uno1!.reconnects, 1)
  t.same(
    published.filter((p) => p.includes('availability')),
    [
      'boards/uno1/availability online',
      'boards/uno1/availability offline',
      'boards/uno1/availability online',
    ],
  )
  const analog2 = [...ios[1]!.analog.values()][0]!
  analog2(500)
  await waitFor(() => published.includes('boards/uno1/temp 500'), 'events after the reconnect')
  t.equal(bridge.stats().boards.uno1!.kind, 'firmata')
})

t.test('bad firmata profiles are rejected with the board and field', async (t) => {
  const bad = (profile: unknown) =>
    checkBoardConfigs([{ ...profileBoard, profile: profile as BoardConfig['profile'] }])
  t.match(bad(undefined), { ok: false, error: 'boards[0] (uno1).profile: a firmata board needs a profile' })
  t.match(bad({ signals: [] }), { ok: false, error: /^boards\[0\] \(uno1\)\.profile\/signals: / })
  t.match(bad({ signals: [{ signal: 'a/b', type: 'digital', pin: 2 }] }), {
    ok: false,
    error: /^boards\[0\] \(uno1\)\.profile/,
  })
  t.match(bad({ signals: [{ signal: 't', type: 'analog', pin: 'A0', threshold: 0 }] }), {
    ok: false,
    error: /^boards\[0\] \(uno1\)\.profile/,
  })
  t.match(bad({ signals: [{ signal: 't', type: 'servo', pin: 9 }] }), {
    ok: false,
    error: /^boards\[0\] \(uno1\)\.profile/,
  })
  t.same(bad(profileBoard.profile), { ok: true })
})
