// The bridge's public shapes: what the hub passes in and gets back.
import type { BindingInterface } from './serial/binding-types.ts'
import type { Json } from './codec/index.ts'
import type { FirmataProfile } from './firmata/profile.ts'

export type { Json, BindingInterface, FirmataProfile }

/** The part of a Firmata IO object (firmata.js, mock-firmata) that the link uses. */
export interface FirmataIo {
  on(event: string, fn: (...a: unknown[]) => void): unknown
  removeAllListeners?(event?: string): unknown
  pins: Array<{ value?: number; supportedModes?: number[] } | undefined>
  pinMode(pin: number, mode: number): void
  digitalWrite(pin: number, value: number): void
  reset?(): void
  transport?: { close?(cb?: () => void): void }
}

/** A board's `simulate` setting: the hub plays such a board in-process (boards/simulator). */
export interface SimulatorOptions {
  /** Events per second (default 1; 0 = only on `emitEvents`). */
  rate?: number
  /** Signal of the generated events (default `coin`). */
  signal?: string
  /** Text of the n-th event (default: a vending coin `{"slot":"A1","amount":2}`, slots cycling). */
  text?: (n: number) => string
  /** Say nothing at all: no hello, no events, no replies (a hung board, for heartbeat tests). */
  mute?: boolean
}

/**
 * The one logger shape of the project (pino's call form, narrowed to what we call): the bridge
 * declares it because it is the lowest layer; hub/log.ts re-exports it for everything above.
 */
export interface Log {
  info(obj: object | string, msg?: string): void
  warn(obj: object | string, msg?: string): void
  error(obj: object | string, msg?: string): void
  /** Noise worth keeping only when asked for (pino's debug level); absent in recorders. */
  debug?(obj: object | string, msg?: string): void
}

export type PublishFn = (
  topic: string,
  payload: string,
  opts: { qos: 0 | 1; retain: boolean },
) => Promise<void>

export interface BoardConfig {
  /** Topic level `boards/<name>/…`; [A-Za-z0-9_.-]{1,64}. */
  name: string
  /** Port path (`/dev/ttyUSB0`, `COM3`, or any path for a simulated board). */
  port: string
  /** Default 115200 (8N1). */
  baud?: number
  /** Longest line accepted, bytes without the newline; default 1024. */
  lineCap?: number
  /** Silence after which the bridge pings the board, and declares it gone if the ping fails; default 10000, 0 = off. */
  heartbeatMs?: number
  kind?: 'serial' | 'firmata'
  profile?: FirmataProfile
  /** Play an in-process simulated board at `port` on the mock binding (no hardware needed). */
  simulate?: boolean | SimulatorOptions
}

export interface BackoffOptions {
  /** First reconnect delay; default 250 ms. */
  initialMs?: number
  /** Delays double up to this; default 10000 ms. */
  maxMs?: number
}

export interface BridgeOptions {
  boards: BoardConfig[]
  publish: PublishFn
  log?: Log
  /** serialport binding; default the real one. Tests pass the mock (or boards/simulator's device binding). */
  binding?: BindingInterface
  now?: () => number
  /** Reconnect backoff for unplugged ports. */
  backoff?: BackoffOptions
  /** Events held while `publish` fails, beyond which the oldest are dropped and counted; default 10000. */
  maxQueued?: number
  /** QoS1 publishes awaited at once; default 256. */
  publishWindow?: number
  /** Default command timeout; default 2000 ms. */
  commandTimeoutMs?: number
  /** Firmata IO factory; default johnny-five opens the port with firmata.js. Tests pass mock-firmata. */
  firmataIo?: (cfg: BoardConfig) => FirmataIo
  /**
   * Where each board's availability goes. Default: `publish` (retained, QoS 1, through the queue).
   * The hub passes its own so that, on an external broker, each board's state travels on a
   * session whose will says `offline` (bridge/README "Availability").
   */
  availability?: (board: string, state: 'online' | 'offline') => void
  /** Least time between two `boards/<b>/stats` publishes of one board; default 5000 ms, 0 = never. */
  statsIntervalMs?: number
  /** Least time between two log lines about one kind of dropped line of one board; default 10000 ms. */
  warnIntervalMs?: number
}

/**
 * `connecting`: no port open yet. `silent`: the port is open but the board has not answered since
 * it opened (availability stays `offline`). `online`: it has. `offline`: the port is lost or the
 * board stopped answering. `updating`: the port was handed over (`release`, a firmware flash) and
 * stays closed until `reclaim`. `closed`: the bridge is closed.
 */
export type BoardState = 'connecting' | 'silent' | 'online' | 'offline' | 'updating' | 'closed'

export interface BoardStats {
  kind: 'serial' | 'firmata'
  state: BoardState
  /** Name the board gave in its last `hello` (undefined until then). */
  hello: string | undefined
  /** Firmware the board named in its last `hello` (or the Firmata firmware), if any. */
  fw: string | undefined
  /** The version in `fw` when it reads `<name>/<version>` (the companion firmware's form). */
  version?: string | undefined
  /** The line protocol the last `hello` named (1 when it named none); undefined before a hello and for Firmata. */
  proto?: number | undefined
  /** `hello` lines received: more than one means the board rebooted. */
  hellos: number
  /** Complete lines within the cap. */
  lines: number
  /** `message` events accepted for publishing. */
  events: number
  /** Events the broker acknowledged. */
  published: number
  /** Lines dropped whole for passing the cap. */
  oversized: number
  /** Lines that were not a valid hello, message or reply. */
  garbage: number
  /** Replies whose id matched no waiting command (late, after a timeout). */
  unmatched: number
  /** Events dropped because the publish queue was full. */
  dropped: number
  /** Successful re-opens after the port was lost. */
  reconnects: number
  commands: number
  timeouts: number
  /** When the last `message` event arrived (ISO 8601), null before the first. */
  last_event_at: string | null
}

export interface QueueStats {
  pending: number
  inflight: number
  delivered: number
  dropped: number
  retries: number
}

export interface BridgeStats {
  boards: Record<string, BoardStats>
  queue: QueueStats
}

/** Why a command failed: lets the local API pick a status and tell "board said no" from "no board". */
export type SendFailure =
  | 'unknown_board'
  | 'offline'
  | 'bad_command'
  | 'busy'
  | 'timeout'
  | 'write'
  | 'board_error'
  | 'closed'
  /** The port is handed over for a firmware flash (`release`) until `reclaim`. */
  | 'updating'

export type SendResult = { ok: true; result: Json } | { ok: false; error: string; code?: SendFailure }

/** Why a port could not be handed over or taken back. */
export type HandoverFailure = 'unknown_board' | 'closed' | 'unsupported' | 'updating' | 'not_released'

/** `port`: the path the board's port has, for whoever takes it (avrdude's `-P`). */
export type HandoverResult = { ok: true; port: string } | { ok: false; error: string; code: HandoverFailure }

/** What a board's `hello` said of itself (its `boards/<b>/info`): `fw` "name/version", `proto`, … */
export type HelloInfo = Record<string, Json>

export interface Bridge {
  start(): Promise<void>
  send(board: string, cmd: string, args: Json, opts?: { timeoutMs?: number }): Promise<SendResult>
  stats(): BridgeStats
  /**
   * Closes the board's port and keeps it closed (state `updating`, availability `offline`, no
   * reopen, commands refused with code `updating`) so another program can use it: a firmware flash.
   * Serial boards only.
   */
  release(board: string): Promise<HandoverResult>
  /** Reopens a released port as at start; resolves after the first open attempt. */
  reclaim(board: string): Promise<HandoverResult>
  /** Calls `fn` with every board's every hello (and a Firmata board's handshake); returns the unsubscribe. */
  onHello(fn: (board: string, info: HelloInfo) => void): () => void
  close(): Promise<void>
}
