// A Firmata board through johnny-five. The profile maps pins to signals; johnny-five's Sensor
// does the sampling (`intervalMs` = its `freq`) and the change filter (`threshold`), and every
// change becomes the same `message` event a companion-firmware board would send. Commands
// (ping, capabilities, gpio_read, gpio_write) are answered from the Firmata IO layer so SOPs
// use one `board_send` vocabulary for both kinds.
import { createRequire } from 'node:module'
import { SerialPortStream } from '@serialport/stream'
import five from 'johnny-five'
import { errorText } from '../../errors/text.ts'
import type { Json } from '../codec/index.ts'
import { createReconnect, type Reconnect } from '../reconnect.ts'
import type {
  BindingInterface,
  BoardConfig,
  BoardState,
  BoardStats,
  FirmataIo,
  Log,
  SendResult,
} from '../types.ts'
import type { FirmataProfile, ProfileSignal } from './profile.ts'

// firmata-io is CommonJS without types: its Firmata class, typed as far as the link uses it.
const { Firmata } = createRequire(import.meta.url)('firmata-io') as {
  Firmata: new (transport: unknown) => FirmataIo
}

export interface FirmataLinkDeps {
  log: Log
  now: () => number
  backoffInitialMs: number
  backoffMaxMs: number
  event(board: string, signal: string, text: string): void
  availability(board: string, state: 'online' | 'offline'): void
  /** What the board is (published retained at `boards/<b>/info`): here, what the Firmata handshake told. */
  info(board: string, info: Record<string, Json>): void
  /** Makes the IO object; default: firmata-io on a stream over `cfg.port` opened with `binding`. Tests pass mock-firmata. */
  firmataIo?: (cfg: BoardConfig) => FirmataIo
  /** Opens the real port when there is no `firmataIo`: the bridge's binding, hangups detected. */
  binding: BindingInterface
  /** How long johnny-five waits for the Firmata handshake before giving up on an attempt; default 10 s. */
  handshakeTimeoutMs?: number
}

export const FIRMATA_HANDSHAKE_MS = 10_000

/** StandardFirmata's rate. */
export const FIRMATA_BAUD = 57600

const OUTPUT = 1

/**
 * johnny-five reports some failures as its log events (`{ class, message }`, the message a page of
 * advice) rather than as Errors: keep the class and the first line. Anything else as errorText.
 */
export function firmataErrorText(err: unknown): string {
  if (
    !(err instanceof Error) &&
    typeof err === 'object' &&
    err !== null &&
    typeof (err as { message?: unknown }).message === 'string'
  ) {
    const { class: cls, message } = err as { class?: unknown; message: string }
    const first = message.split('\n')[0]!.trim()
    return typeof cls === 'string' && cls ? `${cls}: ${first}` : first
  }
  return errorText(err)
}

/** What the link uses of johnny-five's Sensor (its published typings lack `disable` and the change value). */
interface SensorLike {
  on(event: 'change', cb: (value: unknown) => void): unknown
  disable(): void
}

export class FirmataLink {
  readonly name: string
  readonly publishCounts = { published: 0, dropped: 0 }
  private readonly profile: FirmataProfile
  private state: BoardState = 'connecting'
  private stopped = false
  private everOnline = false
  private board: five.Board | undefined
  private io: FirmataIo | undefined
  private sensors: SensorLike[] = []
  private readonly reconnect: Reconnect
  private readonly counts = { events: 0, reconnects: 0, commands: 0, handshakes: 0 }
  private fw: string | undefined
  private lastEventAt: number | null = null

  constructor(
    private readonly cfg: BoardConfig,
    private readonly deps: FirmataLinkDeps,
  ) {
    this.name = cfg.name
    // config.ts has checked the profile is present and valid.
    this.profile = cfg.profile as FirmataProfile
    this.reconnect = createReconnect(deps.backoffInitialMs, deps.backoffMaxMs)
  }

  start(): Promise<void> {
    return new Promise((resolve) => this.connect(resolve))
  }

  /** The IO object in use (tests drive mock-firmata through it). */
  currentIo(): FirmataIo | undefined {
    return this.io
  }

  async send(cmd: string, args: Json, _timeoutMs?: number): Promise<SendResult> {
    if (this.state !== 'online' || !this.io)
      return { ok: false, error: `board ${this.name} is ${this.state}`, code: 'offline' }
    this.counts.commands++
    const a = typeof args === 'object' && args !== null && !Array.isArray(args) ? args : {}
    const pin = a.pin
    const pinOk = typeof pin === 'number' && Number.isInteger(pin) && pin >= 0 && pin < this.io.pins.length
    switch (cmd) {
      case 'ping':
        return { ok: true, result: 'pong' }
      case 'capabilities':
        return {
          ok: true,
          result: {
            fw: 'firmata',
            commands: ['ping', 'gpio_read', 'gpio_write', 'capabilities'],
            pins: this.io.pins.length,
          },
        }
      case 'gpio_read':
        if (!pinOk)
          return {
            ok: false,
            error: `args.pin: must be an integer from 0 to ${this.io.pins.length - 1}`,
            code: 'board_error',
          }
        return { ok: true, result: { pin, value: this.io.pins[pin]?.value ?? 0 } }
      case 'gpio_write': {
        if (!pinOk)
          return {
            ok: false,
            error: `args.pin: must be an integer from 0 to ${this.io.pins.length - 1}`,
            code: 'board_error',
          }
        if (a.value !== 0 && a.value !== 1)
          return { ok: false, error: 'args.value: must be 0 or 1', code: 'board_error' }
        this.io.pinMode(pin, OUTPUT)
        this.io.digitalWrite(pin, a.value)
        return { ok: true, result: { pin, value: a.value } }
      }
      default:
        return {
          ok: false,
          error: `cmd: unknown command "${cmd}" (firmata boards answer ping, capabilities, gpio_read, gpio_write)`,
          code: 'board_error',
        }
    }
  }

  stats(): BoardStats {
    return {
      kind: 'firmata',
      state: this.state,
      hello: undefined,
      fw: this.fw,
      hellos: this.counts.handshakes,
      lines: 0,
      events: this.counts.events,
      published: this.publishCounts.published,
      oversized: 0,
      garbage: 0,
      unmatched: 0,
      dropped: this.publishCounts.dropped,
      reconnects: this.counts.reconnects,
      commands: this.counts.commands,
      timeouts: 0,
      last_event_at: this.lastEventAt === null ? null : new Date(this.lastEventAt).toISOString(),
    }
  }

  async close(): Promise<void> {
    this.stopped = true
    this.reconnect.stop()
    const wasOnline = this.state === 'online'
    this.state = 'closed'
    this.teardown()
    if (wasOnline) this.deps.availability(this.name, 'offline')
  }

  private connect(firstAttempt?: () => void): void {
    if (this.stopped) return firstAttempt?.()
    let settled = false
    const settle = (): void => {
      if (!settled) {
        settled = true
        firstAttempt?.()
      }
    }
    try {
      // firmata.js's own entry point would open the path with its bundled serialport 8, whose reads
      // spin on a hung-up port exactly as bindings-cpp 13's do, and which throws at require time
      // when its native build does not match the running Node. Its protocol half (firmata-io) is
      // given a stream on the bridge's binding instead, opened once everything listens to it.
      const port = this.deps.firmataIo
        ? undefined
        : new SerialPortStream({
            binding: this.deps.binding,
            path: this.cfg.port,
            baudRate: this.cfg.baud ?? FIRMATA_BAUD,
            autoOpen: false,
          })
      const io = this.deps.firmataIo?.(this.cfg) ?? new Firmata(port)
      this.io = io
      const timeout = this.deps.handshakeTimeoutMs ?? FIRMATA_HANDSHAKE_MS
      const board = new five.Board({ io, repl: false, debug: false, timeout } as five.BoardOption)
      this.board = board
      board.on('ready', () => {
        if (this.board !== board) return
        this.io = board.io as FirmataIo
        this.online()
        settle()
      })
      // johnny-five forwards the IO's errors only once it is ready (an IO error event nobody
      // listens to would throw), and reports a handshake timeout twice (its log event, then an
      // Error). The first error of any kind ends this attempt; what comes after is about a board
      // already let go. Nothing reaches the IO before the port opens, below.
      const failed = (err: unknown): void => {
        settle()
        if (this.board !== board) return
        this.deps.log.warn(
          { board: this.name, port: this.cfg.port, err: firmataErrorText(err) },
          'firmata board error',
        )
        this.lost('error')
      }
      board.on('error', failed)
      io.on('error', failed)
      for (const ev of ['close', 'disconnect']) {
        io.on(ev, () => {
          if (this.board === board) this.lost(ev)
        })
      }
      port?.open()
    } catch (err) {
      this.deps.log.warn(
        { board: this.name, port: this.cfg.port, err: firmataErrorText(err) },
        'cannot open firmata board; retrying',
      )
      this.scheduleReconnect()
      settle()
    }
  }

  private online(): void {
    if (this.everOnline) this.counts.reconnects++
    this.everOnline = true
    this.reconnect.succeeded()
    // The Firmata handshake (the board reporting its firmware and capabilities) is its answer.
    this.state = 'online'
    this.counts.handshakes++
    const fwInfo = (
      this.io as { firmware?: { name?: unknown; version?: { major?: unknown; minor?: unknown } } }
    )?.firmware
    this.fw =
      typeof fwInfo?.name === 'string'
        ? `${fwInfo.name}${fwInfo.version ? ` ${String(fwInfo.version.major)}.${String(fwInfo.version.minor)}` : ''}`
        : 'firmata'
    this.sensors = this.profile.signals.map((s) => this.sensorFor(s))
    this.deps.log.info({ board: this.name, port: this.cfg.port, fw: this.fw }, 'firmata board online')
    this.deps.info(this.name, {
      name: this.name,
      fw: this.fw,
      pins: this.io?.pins.length ?? 0,
      at: new Date(this.deps.now()).toISOString(),
    })
    this.deps.availability(this.name, 'online')
  }

  private sensorFor(s: ProfileSignal): SensorLike {
    const sensor = (s.type === 'digital'
      ? new five.Sensor({ board: this.board, pin: s.pin, type: 'digital', freq: 25 })
      : new five.Sensor({
          board: this.board,
          pin: s.pin,
          type: 'analog',
          freq: s.intervalMs ?? 100,
          threshold: s.threshold ?? 1,
        })) as unknown as SensorLike
    sensor.on('change', (value: unknown) => {
      if (typeof value !== 'number' || !Number.isFinite(value)) return
      const v = s.type === 'digital' && s.invert ? (value ? 0 : 1) : value
      this.counts.events++
      this.lastEventAt = this.deps.now()
      this.deps.event(this.name, s.signal, String(v))
    })
    return sensor
  }

  private teardown(): void {
    for (const s of this.sensors) s.disable()
    this.sensors = []
    const board = this.board
    this.board = undefined
    this.io = undefined
    try {
      ;(board?.io as FirmataIo | undefined)?.transport?.close?.()
    } catch {
      // The port is already gone; nothing left to close.
    }
  }

  /**
   * The current attempt or connection failed. Callers ignore events from boards that are no longer
   * `this.board`, so each attempt ends here once; a failed retry must schedule the next one too.
   */
  private lost(reason: string): void {
    if (this.stopped) return
    const wasOnline = this.state === 'online'
    this.teardown()
    if (this.state !== 'offline')
      this.deps.log.warn({ board: this.name, reason }, 'firmata board offline; reconnecting')
    this.state = 'offline'
    if (wasOnline) this.deps.availability(this.name, 'offline')
    this.scheduleReconnect()
  }

  private scheduleReconnect(): void {
    if (this.stopped) return
    this.reconnect.schedule(() => this.connect())
  }
}
