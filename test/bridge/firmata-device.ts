// A StandardFirmata board played on one end of a pty pair, byte for byte, so the bridge's real
// Firmata path (johnny-five, firmata-io, our serial binding) can be tested without an Arduino.
// It answers the handshake (version, firmware, capabilities, analog mapping), reports digital
// ports while asked to, records pin writes, and can change an input pin.
import { playOnPort, type PlayedDevice } from '../../boards/simulator/on-port.ts'
import type { Device } from '../../boards/simulator/device-binding.ts'

const REPORT_VERSION = 0xf9
const START_SYSEX = 0xf0
const END_SYSEX = 0xf7
const QUERY_FIRMWARE = 0x79
const CAPABILITY_QUERY = 0x6b
const CAPABILITY_RESPONSE = 0x6c
const ANALOG_MAPPING_QUERY = 0x69
const ANALOG_MAPPING_RESPONSE = 0x6a
const DIGITAL_MESSAGE = 0x90
const SET_PIN_MODE = 0xf4
const SET_DIGITAL_PIN_VALUE = 0xf5
const REPORT_DIGITAL = 0xd0
const ANALOG_MESSAGE = 0xe0
const REPORT_ANALOG = 0xc0
const SYSTEM_RESET = 0xff
const NO_MODE = 0x7f

/** An Uno: pins 0–1 serial, 2–13 digital (input, output, pullup), 14–19 also analog A0–A5. */
const PINS = 20
const FIRST_ANALOG = 14

export interface FirmataDevice extends PlayedDevice {
  /** Modes set by the host, by pin. */
  modes: Map<number, number>
  /** Digital writes from the host, in order. */
  writes: Array<[pin: number, value: 0 | 1]>
  /** Drives an input pin; reported at once if the host asked for its port. */
  setDigital(pin: number, value: 0 | 1): void
}

function sysex(cmd: number, body: number[]): Buffer {
  return Buffer.from([START_SYSEX, cmd, ...body, END_SYSEX])
}

function handshake(): Buffer {
  const name = [...'StandardFirmata.ino'].flatMap((c) => [c.charCodeAt(0) & 0x7f, c.charCodeAt(0) >> 7])
  return Buffer.concat([Buffer.from([REPORT_VERSION, 2, 5]), sysex(QUERY_FIRMWARE, [2, 5, ...name])])
}

function capabilities(): Buffer {
  const body: number[] = []
  for (let pin = 0; pin < PINS; pin++) {
    if (pin >= 2) body.push(0x00, 1, 0x01, 1, 0x0b, 1) // input, output, pullup
    if (pin >= FIRST_ANALOG) body.push(0x02, 10) // analog, 10 bits
    body.push(NO_MODE)
  }
  return sysex(CAPABILITY_RESPONSE, body)
}

function analogMapping(): Buffer {
  return sysex(
    ANALOG_MAPPING_RESPONSE,
    Array.from({ length: PINS }, (_, pin) => (pin >= FIRST_ANALOG ? pin - FIRST_ANALOG : NO_MODE)),
  )
}

/** Bytes of a host message after its command byte, for the messages that have a fixed length. */
function argCount(cmd: number): number {
  const high = cmd & 0xf0
  if (high === DIGITAL_MESSAGE || high === ANALOG_MESSAGE) return 2
  if (high === REPORT_DIGITAL || high === REPORT_ANALOG) return 1
  if (cmd === SET_PIN_MODE || cmd === SET_DIGITAL_PIN_VALUE) return 2
  return 0
}

/** A StandardFirmata as a `Device`: what it was told, and a pin the test can drive. */
function createFirmataDevice(): Device & Omit<FirmataDevice, keyof PlayedDevice> {
  const levels = new Array<0 | 1>(PINS).fill(0)
  const reporting = new Set<number>()
  let emit: ((bytes: Buffer) => void) | undefined
  let announce: NodeJS.Timeout | undefined
  let message: number[] = []
  let inSysex = false

  const send = (bytes: Buffer): void => emit?.(bytes)
  function reportPort(p: number): void {
    let bits = 0
    for (let i = 0; i < 8; i++) if (levels[p * 8 + i]) bits |= 1 << i
    send(Buffer.from([DIGITAL_MESSAGE | p, bits & 0x7f, bits >> 7]))
  }

  const dev = {
    modes: new Map<number, number>(),
    writes: [] as Array<[pin: number, value: 0 | 1]>,
    setDigital(pin: number, value: 0 | 1) {
      levels[pin] = value
      if (reporting.has(pin >> 3)) reportPort(pin >> 3)
    },
    opened(e: (bytes: Buffer) => void) {
      emit = e
      // A real board announces itself after its reset; the host's open may discard what came
      // before it, so say it again until the host starts asking for capabilities.
      announce = setInterval(() => send(handshake()), 50)
    },
    received(chunk: Buffer) {
      for (const b of chunk) {
        if (inSysex) {
          message.push(b)
          if (b === END_SYSEX) {
            inSysex = false
            handle(message)
            message = []
          }
          continue
        }
        if (b === START_SYSEX) {
          inSysex = true
          message = [b]
          continue
        }
        if (b & 0x80) message = [b]
        else if (message.length > 0) message.push(b)
        else continue // a data byte with no command: noise, as the firmware ignores it
        if (message.length === 1 + argCount(message[0]!)) {
          handle(message)
          message = []
        }
      }
    },
    closed() {
      clearInterval(announce)
      emit = undefined
    },
  }

  function handle(m: number[]): void {
    const cmd = m[0]!
    if (cmd === START_SYSEX) {
      if (m[1] === QUERY_FIRMWARE) send(handshake().subarray(3))
      if (m[1] === CAPABILITY_QUERY) {
        clearInterval(announce)
        send(capabilities())
      }
      if (m[1] === ANALOG_MAPPING_QUERY) send(analogMapping())
      return
    }
    if (cmd === REPORT_VERSION) send(handshake().subarray(0, 3))
    if (cmd === SYSTEM_RESET) reporting.clear()
    if (cmd === SET_PIN_MODE) dev.modes.set(m[1]!, m[2]!)
    if (cmd === SET_DIGITAL_PIN_VALUE) dev.writes.push([m[1]!, m[2] ? 1 : 0])
    if ((cmd & 0xf0) === REPORT_DIGITAL) {
      const p = cmd & 0x0f
      if (m[1]) {
        reporting.add(p)
        reportPort(p)
      } else reporting.delete(p)
    }
    if ((cmd & 0xf0) === DIGITAL_MESSAGE) {
      const p = cmd & 0x0f
      const bits = m[1]! | (m[2]! << 7)
      for (let i = 0; i < 8; i++) {
        const pin = p * 8 + i
        if (dev.modes.get(pin) !== 0x01) continue
        const v: 0 | 1 = bits & (1 << i) ? 1 : 0
        if (levels[pin] !== v) dev.writes.push([pin, v])
        levels[pin] = v
      }
    }
  }

  return dev
}

/** Plays a StandardFirmata on `path` (one end of a pty pair) at its 57600 baud. */
export async function runFirmataDevice(path: string): Promise<FirmataDevice> {
  const device = createFirmataDevice()
  const r = await playOnPort(path, device, 57600)
  if (!r.ok) throw new Error(r.error)
  // Not Object.assign: the device's own `closed()` is what the port calls when it closes.
  return { modes: device.modes, writes: device.writes, setDigital: device.setDigital, ...r.played }
}
