// One board on one serial port: open, frame lines with the cap, dispatch them, notice the board
// going away (close/error from the port, or a heartbeat ping that goes unanswered), and reopen
// with backoff until it comes back.
import { DelimiterParser } from '@serialport/parser-delimiter'
import { SerialPortStream } from '@serialport/stream'
import { createLineFramer, DEFAULT_LINE_CAP, type Json, type LineFramer } from '../codec/index.ts'
import { createCommandChannel, type CommandChannel } from '../commands.ts'
import { createRateLimitedWarn, type RateLimitedWarn } from '../log-limit.ts'
import { createReconnect, type Reconnect } from '../reconnect.ts'
import type { BindingInterface, BoardConfig, BoardState, BoardStats, Log, SendResult } from '../types.ts'
import { createCapGuard } from './cap-guard.ts'
import { dispatchLine, type LineSink } from './dispatch.ts'

export const DEFAULT_BAUD = 115200
export const DEFAULT_HEARTBEAT_MS = 10_000

export interface LinkDeps {
  binding: BindingInterface
  log: Log
  now: () => number
  backoffInitialMs: number
  backoffMaxMs: number
  commandTimeoutMs: number
  /** An accepted `message` event. */
  event(board: string, signal: string, text: string): void
  availability(board: string, state: 'online' | 'offline'): void
  /** The publish queue is backed up while the broker keeps up: stop reading for now. */
  underPressure(): boolean
  whenRelieved(fn: () => void): void
}

export class SerialLink implements LineSink {
  readonly name: string
  private readonly framer: LineFramer
  private readonly commands: CommandChannel
  private readonly warnLimited: RateLimitedWarn
  private port: SerialPortStream | undefined
  private state: BoardState = 'connecting'
  private stopped = false
  private everOpened = false
  private readonly reconnect: Reconnect
  private heartbeatTimer: NodeJS.Timeout | undefined
  private lastRx = 0
  /** Whether the board has sent anything since this open: only then does silence mean it left. */
  private heardSinceOpen = false
  private warnedMuteBoard = false
  private helloName: string | undefined
  private readonly counts = { events: 0, garbage: 0, unmatched: 0, reconnects: 0 }
  /** Per-board publish outcomes, kept by the bridge's queue callbacks. */
  readonly publishCounts = { published: 0, dropped: 0 }

  constructor(
    private readonly cfg: BoardConfig,
    private readonly deps: LinkDeps,
  ) {
    this.name = cfg.name
    this.framer = createLineFramer(cfg.lineCap ?? DEFAULT_LINE_CAP)
    this.reconnect = createReconnect(deps.backoffInitialMs, deps.backoffMaxMs)
    this.warnLimited = createRateLimitedWarn(deps.log, 10_000, deps.now)
    this.commands = createCommandChannel({
      board: cfg.name,
      write: (line) => {
        if (!this.port?.isOpen) throw new Error('port is not open')
        this.port.write(line)
      },
      defaultTimeoutMs: deps.commandTimeoutMs,
      maxWaiting: 64,
      setTimer: (fn, ms) => setTimeout(fn, ms),
      clearTimer: (h) => clearTimeout(h as NodeJS.Timeout),
    })
  }

  /** Resolves after the first open attempt, successful or not; retries continue in the background. */
  start(): Promise<void> {
    return new Promise((resolve) => this.open(resolve))
  }

  send(cmd: string, args: Json, timeoutMs?: number): Promise<SendResult> {
    if (this.state !== 'online')
      return Promise.resolve({ ok: false, error: `board ${this.name} is ${this.state}` })
    return this.commands.send(cmd, args, timeoutMs)
  }

  stats(): BoardStats {
    const f = this.framer.counts()
    const c = this.commands.counts()
    return {
      kind: 'serial',
      state: this.state,
      hello: this.helloName,
      lines: f.lines,
      events: this.counts.events,
      published: this.publishCounts.published,
      oversized: f.oversized,
      garbage: this.counts.garbage,
      unmatched: this.counts.unmatched,
      dropped: this.publishCounts.dropped,
      reconnects: this.counts.reconnects,
      commands: c.commands,
      timeouts: c.timeouts,
    }
  }

  async close(): Promise<void> {
    this.stopped = true
    this.reconnect.stop()
    this.stopHeartbeat()
    this.commands.failAll('bridge closing')
    const port = this.port
    this.port = undefined
    const wasOnline = this.state === 'online'
    this.state = 'closed'
    if (port?.isOpen) await new Promise<void>((r) => port.close(() => r()))
    if (wasOnline) this.deps.availability(this.name, 'offline')
  }

  // LineSink: what dispatch.ts calls for each decoded line.
  message(signal: string, text: string): void {
    this.counts.events++
    this.deps.event(this.name, signal, text)
  }
  hello(board: string): void {
    if (board !== this.name) {
      this.deps.log.warn(
        { board: this.name, port: this.cfg.port, hello: board },
        'board names itself differently from the config; the config name is used for topics',
      )
    }
    this.helloName = board
  }
  reply(r: { id: number; ok: boolean; result?: Json; error?: string }): void {
    if (!this.commands.reply(r)) {
      this.counts.unmatched++
      this.warnLimited.warn(
        'unmatched',
        { board: this.name, id: r.id },
        'reply matches no waiting command (late after a timeout?)',
      )
    }
  }
  garbage(error: string, preview: string): void {
    this.counts.garbage++
    this.warnLimited.warn(
      'garbage',
      { board: this.name, port: this.cfg.port, error, line: preview },
      'bad line from board ignored',
    )
  }

  private open(firstAttempt?: () => void): void {
    if (this.stopped) return firstAttempt?.()
    const port = new SerialPortStream({
      binding: this.deps.binding,
      path: this.cfg.port,
      baudRate: this.cfg.baud ?? DEFAULT_BAUD,
      dataBits: 8,
      stopBits: 1,
      parity: 'none',
      autoOpen: false,
    })
    // Errors also arrive as open/close callbacks; an unhandled 'error' event would crash the hub.
    port.on('error', (err: Error) =>
      this.deps.log.warn({ board: this.name, port: this.cfg.port, err: err.message }, 'serial port error'),
    )
    port.open((err) => {
      if (err || this.stopped) {
        if (!err) port.close(() => undefined)
        if (err && this.state !== 'offline' && this.state !== 'connecting') this.state = 'offline'
        if (err)
          this.deps.log.warn(
            { board: this.name, port: this.cfg.port, err: err.message, retryMs: this.reconnect.nextMs },
            'cannot open serial port; retrying',
          )
        this.scheduleReopen()
        return firstAttempt?.()
      }
      this.attach(port)
      firstAttempt?.()
    })
  }

  private attach(port: SerialPortStream): void {
    this.port = port
    this.framer.reset()
    if (this.everOpened) this.counts.reconnects++
    this.everOpened = true
    this.reconnect.succeeded()
    this.state = 'online'
    this.lastRx = this.deps.now()
    const lines = port.pipe(createCapGuard(this.framer)).pipe(new DelimiterParser({ delimiter: '\n' }))
    lines.on('data', (line: Buffer) => {
      dispatchLine(line, this)
      // Backpressure: pausing the line stream fills the pipe back to the port, which stops
      // reading; the tty's own buffer (and the board's flow control, if any) takes the rest.
      if (!lines.isPaused() && this.deps.underPressure()) {
        lines.pause()
        this.deps.whenRelieved(() => lines.resume())
      }
    })
    this.heardSinceOpen = false
    port.on('data', () => {
      this.lastRx = this.deps.now()
      this.heardSinceOpen = true
    })
    port.once('close', (err: (Error & { disconnected?: boolean }) | null) => {
      port.unpipe()
      if (this.port !== port) return
      this.port = undefined
      this.lost(err?.message ?? 'port closed')
    })
    this.deps.log.info({ board: this.name, port: this.cfg.port }, 'board online')
    this.deps.availability(this.name, 'online')
    this.startHeartbeat()
  }

  private lost(reason: string): void {
    this.stopHeartbeat()
    this.commands.failAll(`disconnected (${reason})`)
    if (this.stopped) return
    this.state = 'offline'
    this.deps.log.warn({ board: this.name, port: this.cfg.port, reason }, 'board offline; reopening')
    this.deps.availability(this.name, 'offline')
    this.scheduleReopen()
  }

  private scheduleReopen(): void {
    if (this.stopped) return
    this.reconnect.schedule(() => this.open())
  }

  private startHeartbeat(): void {
    const hb = this.cfg.heartbeatMs ?? DEFAULT_HEARTBEAT_MS
    if (hb <= 0) return
    this.heartbeatTimer = setInterval(() => {
      if (this.deps.now() - this.lastRx < hb || this.commands.busy()) return
      // Silent for a whole period: ask. No answer within the period means the board is gone
      // even though the port is still open (a hung board, a USB adapter without its device).
      const port = this.port
      void this.commands.send('ping', {}, hb).then((r) => {
        if (r.ok || this.port !== port || !port) return
        if (this.deps.now() - this.lastRx < hb) return
        if (!this.heardSinceOpen) {
          // Never a byte since the port opened: a board that does not speak `ping` looks the
          // same as a gone one. Reopening would only make it flap online/offline; keep it.
          if (!this.warnedMuteBoard) {
            this.warnedMuteBoard = true
            this.deps.log.warn(
              { board: this.name, port: this.cfg.port },
              'board has sent nothing and does not answer ping; heartbeat cannot tell if it is there (set heartbeatMs = 0 to stop pinging)',
            )
          }
          return
        }
        this.deps.log.warn({ board: this.name, error: r.error }, 'heartbeat failed; reopening the port')
        this.port = undefined
        port.close(() => undefined)
        this.lost('heartbeat timeout')
      })
    }, hb)
    this.heartbeatTimer.unref?.()
  }

  private stopHeartbeat(): void {
    if (this.heartbeatTimer) clearInterval(this.heartbeatTimer)
    this.heartbeatTimer = undefined
  }
}
