// One board on one serial port: open, frame lines with the cap, dispatch them, notice the board
// going away (close/error from the port, or a heartbeat ping that goes unanswered), and reopen
// with backoff until it comes back.
// Availability is what the board says, not what the port says (bridge/README.md,
// "Availability, info, stats and commands"): an open port is only `silent` until the board answers (a hello, a reply, any valid
// line), and only then `online`. A hung board therefore stays `offline` however often its port
// reopens.
import { DelimiterParser } from '@serialport/parser-delimiter'
import { SerialPortStream } from '@serialport/stream'
import {
  createLineFramer,
  DEFAULT_LINE_CAP,
  type HelloEvent,
  type Json,
  type LineFramer,
} from '../codec/index.ts'
import { DEFAULT_PROTOCOL, SUPPORTED_PROTOCOLS, speaksProtocol, splitFirmware } from '../codec/protocol.ts'
import { createCommandChannel, type CommandChannel } from '../commands.ts'
import { createRateLimitedWarn, type RateLimitedWarn } from '../log-limit.ts'
import { createReconnect, type Reconnect } from '../reconnect.ts'
import type {
  BindingInterface,
  BoardConfig,
  BoardState,
  BoardStats,
  HandoverResult,
  Log,
  SendResult,
} from '../types.ts'
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
  /** What the board told of itself in its `hello` (published retained at `boards/<b>/info`). */
  info(board: string, info: Record<string, Json>): void
  /** Least time between two log lines about one kind of dropped line. */
  warnIntervalMs: number
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
  private reconnect: Reconnect
  /** The port is handed over (`release`): nothing reopens it until `reclaim`. */
  private updating = false
  /** The next successful open is a reclaim, not a reconnect after a loss (not counted as one). */
  private reclaiming = false
  /** An open whose callback has not come yet: `release` waits for it, so no port is left open. */
  private opening: Promise<void> | undefined
  private heartbeatTimer: NodeJS.Timeout | undefined
  /** When the board last sent a valid line (garbage is noise, not an answer). */
  private lastRx = 0
  /** Whether the board has answered since this open: only then is it `online`, and only then does silence mean it left. */
  private answeredSinceOpen = false
  private warnedMuteBoard = false
  private helloName: string | undefined
  private fw: string | undefined
  private fwVersion: string | undefined
  private proto: number | undefined
  /** Protocol versions this board has named that the hub does not speak, each warned about once. */
  private readonly warnedProtocols = new Set<number>()
  private lastEventAt: number | null = null
  private readonly counts = { events: 0, garbage: 0, unmatched: 0, reconnects: 0, hellos: 0 }
  /** Per-board publish outcomes, kept by the bridge's queue callbacks. */
  readonly publishCounts = { published: 0, dropped: 0 }

  constructor(
    private readonly cfg: BoardConfig,
    private readonly deps: LinkDeps,
  ) {
    this.name = cfg.name
    this.framer = createLineFramer(cfg.lineCap ?? DEFAULT_LINE_CAP)
    this.reconnect = createReconnect(deps.backoffInitialMs, deps.backoffMaxMs)
    this.warnLimited = createRateLimitedWarn(deps.log, deps.warnIntervalMs, deps.now)
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

  /** Commands go to any open port: a reply is how a silent board proves it is there. */
  send(cmd: string, args: Json, timeoutMs?: number): Promise<SendResult> {
    if (this.updating)
      return Promise.resolve({
        ok: false,
        error: `board ${this.name} is updating (its firmware is being flashed); try again once it is back online`,
        code: 'updating',
      })
    if (this.state !== 'online' && this.state !== 'silent')
      return Promise.resolve({ ok: false, error: `board ${this.name} is ${this.state}`, code: 'offline' })
    return this.commands.send(cmd, args, timeoutMs)
  }

  stats(): BoardStats {
    const f = this.framer.counts()
    const c = this.commands.counts()
    return {
      kind: 'serial',
      state: this.state,
      hello: this.helloName,
      fw: this.fw,
      version: this.fwVersion,
      proto: this.proto,
      hellos: this.counts.hellos,
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
      last_event_at: this.lastEventAt === null ? null : new Date(this.lastEventAt).toISOString(),
    }
  }

  async close(): Promise<void> {
    this.stopped = true
    this.reconnect.stop()
    this.stopHeartbeat()
    this.commands.failAll('bridge closing')
    this.warnLimited.close()
    const port = this.port
    this.port = undefined
    const wasOnline = this.state === 'online'
    this.state = 'closed'
    if (port?.isOpen) await new Promise<void>((r) => port.close(() => r()))
    if (wasOnline) this.deps.availability(this.name, 'offline')
  }

  /**
   * Hands the port over (a firmware flash): closes it and keeps it closed, `updating`, until
   * `reclaim`. Waiting commands fail with code `updating`; availability goes `offline`.
   */
  async release(): Promise<HandoverResult> {
    if (this.stopped) return { ok: false, error: `board ${this.name}: the bridge is closed`, code: 'closed' }
    if (this.updating)
      return { ok: false, error: `board ${this.name}: its port is already handed over`, code: 'updating' }
    this.updating = true
    this.reconnect.stop()
    this.stopHeartbeat()
    this.commands.failAll('updating (its firmware is being flashed)', 'updating')
    // An open under way attaches (or fails) first; then there is exactly one port, or none, to close.
    await this.opening
    const port = this.port
    // Cleared first, so the port's own 'close' is not taken for a loss (attach's handler).
    this.port = undefined
    const wasOnline = this.state === 'online'
    this.state = 'updating'
    if (port?.isOpen) await new Promise<void>((r) => port.close(() => r()))
    if (wasOnline) this.deps.availability(this.name, 'offline')
    this.deps.log.info({ board: this.name, port: this.cfg.port }, 'serial port released (board updating)')
    return { ok: true, port: this.cfg.port }
  }

  /** Takes a released port back: opens it as at start (and keeps retrying with backoff, as then). */
  reclaim(): Promise<HandoverResult> {
    if (this.stopped)
      return Promise.resolve({ ok: false, error: `board ${this.name}: the bridge is closed`, code: 'closed' })
    if (!this.updating)
      return Promise.resolve({
        ok: false,
        error: `board ${this.name}: its port was not handed over`,
        code: 'not_released',
      })
    this.updating = false
    this.reclaiming = true
    this.state = 'connecting'
    // release stopped the old schedule for good; a fresh one starts from the first delay.
    this.reconnect = createReconnect(this.deps.backoffInitialMs, this.deps.backoffMaxMs)
    this.deps.log.info({ board: this.name, port: this.cfg.port }, 'serial port reclaimed; reopening')
    return new Promise((resolve) => this.open(() => resolve({ ok: true, port: this.cfg.port })))
  }

  // LineSink: what dispatch.ts calls for each decoded line.
  message(signal: string, text: string): void {
    this.answered('message')
    this.counts.events++
    this.lastEventAt = this.deps.now()
    this.deps.event(this.name, signal, text)
  }
  hello(hello: HelloEvent): void {
    // name, version and at are the hub's to set in the info; a hello's own fields of those names give way.
    const {
      event: _e,
      board,
      fw,
      proto: said,
      name: _n,
      version: _v,
      at: _a,
      ...rest
    } = hello as HelloEvent & Record<string, Json>
    const proto = said ?? DEFAULT_PROTOCOL
    const version = fw === undefined ? undefined : splitFirmware(fw)?.version
    this.counts.hellos++
    this.helloName = board
    this.fw = fw
    this.fwVersion = version
    this.proto = proto
    // A hello after the first is a reboot (a watchdog, a brown-out, DTR on port open): worth a line.
    this.deps.log.info(
      {
        board: this.name,
        port: this.cfg.port,
        hello: board,
        fw: fw ?? null,
        proto,
        hellos: this.counts.hellos,
      },
      this.counts.hellos > 1 ? 'board said hello again (it restarted)' : 'board said hello',
    )
    if (!speaksProtocol(proto) && !this.warnedProtocols.has(proto)) {
      // Once per board and version: a board that restarts all day must not fill the log.
      this.warnedProtocols.add(proto)
      this.deps.log.warn(
        { board: this.name, port: this.cfg.port, fw: fw ?? null, proto, supported: [...SUPPORTED_PROTOCOLS] },
        `board ${this.name} speaks line protocol ${proto}, this hub speaks ${SUPPORTED_PROTOCOLS.join(', ')}: ` +
          'it is used as far as the two agree (update the hub, or flash firmware that speaks a protocol it knows)',
      )
    }
    if (board !== this.name) {
      this.deps.log.warn(
        { board: this.name, port: this.cfg.port, hello: board },
        'board names itself differently from the config; the config name is used for topics',
      )
    }
    this.deps.info(this.name, {
      name: board,
      fw: fw ?? null,
      version: version ?? null,
      proto,
      ...rest,
      at: new Date(this.deps.now()).toISOString(),
    })
    this.answered('hello')
  }
  reply(r: { id: number; ok: boolean; result?: Json; error?: string }): void {
    this.answered('reply')
    if (!this.commands.reply(r)) {
      this.counts.unmatched++
      this.warnLimited.warn(
        'unmatched',
        { board: this.name, id: r.id, unmatched: this.counts.unmatched },
        'reply matches no waiting command (late after a timeout?)',
      )
    }
  }
  garbage(error: string, preview: string): void {
    this.counts.garbage++
    this.warnLimited.warn(
      'garbage',
      { board: this.name, port: this.cfg.port, error, line: preview, garbage: this.counts.garbage },
      'bad line from board ignored',
    )
  }

  private oversized(count: number): void {
    this.warnLimited.warn(
      'oversized',
      {
        board: this.name,
        port: this.cfg.port,
        lineCap: this.cfg.lineCap ?? DEFAULT_LINE_CAP,
        oversized: count,
      },
      'line longer than the cap dropped whole',
    )
  }

  /** A valid line arrived: the board is there. The first since the port opened makes it `online`. */
  private answered(how: 'hello' | 'reply' | 'message'): void {
    this.lastRx = this.deps.now()
    if (this.answeredSinceOpen) return
    this.answeredSinceOpen = true
    this.warnedMuteBoard = false
    if (this.state !== 'silent') return
    this.state = 'online'
    this.deps.log.info({ board: this.name, port: this.cfg.port, by: how }, 'board online')
    this.deps.availability(this.name, 'online')
  }

  private open(firstAttempt?: () => void): void {
    if (this.stopped || this.updating) return firstAttempt?.()
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
    let opened!: () => void
    this.opening = new Promise((r) => {
      opened = r
    })
    port.open((err) => {
      opened()
      this.opening = undefined
      if (err || this.stopped || this.updating) {
        if (!err) port.close(() => undefined)
        if (err && this.state !== 'offline' && this.state !== 'connecting') this.state = 'offline'
        if (err && !this.updating)
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
    if (this.everOpened && !this.reclaiming) this.counts.reconnects++
    this.everOpened = true
    this.reclaiming = false
    this.reconnect.succeeded()
    this.state = 'silent'
    this.answeredSinceOpen = false
    this.lastRx = this.deps.now()
    const lines = port
      .pipe(createCapGuard(this.framer, (n) => this.oversized(n)))
      .pipe(new DelimiterParser({ delimiter: '\n' }))
    lines.on('data', (line: Buffer) => {
      dispatchLine(line, this)
      // Backpressure: pausing the line stream fills the pipe back to the port, which stops
      // reading; the tty's own buffer (and the board's flow control, if any) takes the rest.
      if (!lines.isPaused() && this.deps.underPressure()) {
        lines.pause()
        this.deps.whenRelieved(() => lines.resume())
      }
    })
    port.once('close', (err: (Error & { disconnected?: boolean }) | null) => {
      port.unpipe()
      if (this.port !== port) return
      this.port = undefined
      this.lost(err?.message ?? 'port closed')
    })
    this.deps.log.info(
      { board: this.name, port: this.cfg.port },
      'serial port open; waiting for the board to answer',
    )
    const hb = this.cfg.heartbeatMs ?? DEFAULT_HEARTBEAT_MS
    if (hb > 0) this.startHeartbeat(hb)
    // Ask once, at once, even with the heartbeat off: a board that does not say hello on its own
    // (already running, not reset by the open) answers this, and is `online` as soon as it does.
    void this.commands.send('ping', {}, hb > 0 ? hb : this.deps.commandTimeoutMs)
  }

  private lost(reason: string): void {
    this.stopHeartbeat()
    this.commands.failAll(`disconnected (${reason})`)
    if (this.stopped) return
    const wasOnline = this.state === 'online'
    this.state = 'offline'
    this.deps.log.warn({ board: this.name, port: this.cfg.port, reason }, 'board offline; reopening')
    if (wasOnline) this.deps.availability(this.name, 'offline')
    this.scheduleReopen()
  }

  private scheduleReopen(): void {
    if (this.stopped || this.updating) return
    this.reconnect.schedule(() => this.open())
  }

  private startHeartbeat(hb: number): void {
    this.heartbeatTimer = setInterval(() => {
      if (this.deps.now() - this.lastRx < hb || this.commands.busy()) return
      // Silent for a whole period: ask. No answer within the period means the board is gone
      // even though the port is still open (a hung board, a USB adapter without its device).
      const port = this.port
      void this.commands.send('ping', {}, hb).then((r) => {
        if (r.ok || this.port !== port || !port) return
        if (this.deps.now() - this.lastRx < hb) return
        if (!this.answeredSinceOpen) {
          // Not one valid line since the port opened: the board is `offline` already, and a
          // reopen would tell nothing new (and reset an Arduino through DTR each time). Keep
          // the port and keep asking; the first answer makes it `online`.
          if (!this.warnedMuteBoard) {
            this.warnedMuteBoard = true
            this.deps.log.warn(
              { board: this.name, port: this.cfg.port },
              'board has not answered since its port opened (no hello, no reply to ping); it stays offline until it does',
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
