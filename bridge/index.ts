// The bridge: boards (serial JSON-line boards and Firmata boards) → `publish` (the hub wires it
// to MQTT). README.md, "The flow": board ──serial JSON line──▶ bridge ──MQTT──▶ broker.
// Topics: `boards/<board>/<signal>` (QoS1, payload = the event's text),
// `boards/<board>/availability` (`online`/`offline`, retained), `boards/<board>/info` (what the
// board's hello said, retained) and `boards/<board>/stats` (its counters, retained, rate-limited).
import { SerialPort } from 'serialport'
import { errorText } from '../errors/text.ts'
import { availabilityTopic, boardTopic } from '../mqtt/topics.ts'
import { createStatsPublisher } from './stats-publisher.ts'
import { checkBoardConfigs } from './config.ts'
import { FirmataLink } from './firmata/link.ts'
import { createPublishQueue, type QueueItem } from './publish-queue.ts'
import { withHangupDetection } from './serial/hangup-binding.ts'
import { SerialLink } from './serial/link.ts'
import type {
  BindingInterface,
  BoardStats,
  Bridge,
  BridgeOptions,
  HandoverResult,
  HelloInfo,
  Json,
  Log,
  SendResult,
} from './types.ts'

export * from './types.ts'
export { checkBoardConfigs } from './config.ts'

export const DEFAULT_MAX_QUEUED = 10_000

/** What the bridge needs from a link, serial or Firmata. */
interface Link {
  readonly name: string
  readonly publishCounts: { published: number; dropped: number }
  start(): Promise<void>
  send(cmd: string, args: Json, timeoutMs?: number): Promise<SendResult>
  stats(): BoardStats
  /** Port handover for a firmware flash; absent where not supported (Firmata boards). */
  release?(): Promise<HandoverResult>
  reclaim?(): Promise<HandoverResult>
  close(): Promise<void>
}

const silent: Log = { info: () => undefined, warn: () => undefined, error: () => undefined }

export function createBridge(opts: BridgeOptions): Bridge {
  const checked = checkBoardConfigs(opts.boards)
  if (!checked.ok) throw new TypeError(checked.error)
  const log = opts.log ?? silent
  const now = opts.now ?? Date.now
  const links = new Map<string, Link>()
  const helloListeners = new Set<(board: string, info: HelloInfo) => void>()
  let started = false
  let closed = false

  const retained = (board: string, topic: string, payload: string): void =>
    queue.push({ topic, payload, qos: 1, retain: true, board })

  const queue = createPublishQueue({
    publish: opts.publish,
    max: opts.maxQueued ?? DEFAULT_MAX_QUEUED,
    window: opts.publishWindow ?? 256,
    highWater: Math.max(1, Math.min(2048, Math.floor((opts.maxQueued ?? DEFAULT_MAX_QUEUED) / 2))),
    retryInitialMs: opts.backoff?.initialMs ?? 250,
    retryMaxMs: opts.backoff?.maxMs ?? 10_000,
    onDelivered: (item: QueueItem) => {
      if (!item.retain) {
        const c = links.get(item.board)?.publishCounts
        if (c) c.published++
      }
    },
    onDropped: (item: QueueItem) => {
      const c = links.get(item.board)?.publishCounts
      if (c) c.dropped++
      dropWarn(item)
    },
    onFailed: (item: QueueItem, err: unknown) => failWarn(item, err),
  })

  // Both warnings are rate-limited: a broker outage fails every event.
  let lastDropWarn = -Infinity
  function dropWarn(item: QueueItem): void {
    if (now() - lastDropWarn < 10_000) return
    lastDropWarn = now()
    log.warn(
      { board: item.board, topic: item.topic, dropped: queue.stats().dropped },
      'publish queue full; oldest events dropped',
    )
  }
  let lastFailWarn = -Infinity
  function failWarn(item: QueueItem, err: unknown): void {
    if (now() - lastFailWarn < 10_000) return
    lastFailWarn = now()
    log.warn(
      {
        topic: item.topic,
        err: errorText(err),
        pending: queue.stats().pending,
      },
      'publish failed; events kept and retried',
    )
  }

  const deps = {
    log,
    now,
    backoffInitialMs: opts.backoff?.initialMs ?? 250,
    backoffMaxMs: opts.backoff?.maxMs ?? 10_000,
    commandTimeoutMs: opts.commandTimeoutMs ?? 2000,
    event: (board: string, signal: string, text: string) =>
      queue.push({ topic: boardTopic(board, signal), payload: text, qos: 1, retain: false, board }),
    availability:
      opts.availability ??
      ((board: string, state: 'online' | 'offline') => retained(board, availabilityTopic(board), state)),
    info: (board: string, info: Record<string, Json>) => {
      retained(board, boardTopic(board, 'info'), JSON.stringify(info))
      for (const fn of helloListeners) {
        try {
          fn(board, info)
        } catch (err) {
          log.error({ board, err: errorText(err) }, 'hello listener failed')
        }
      }
    },
    warnIntervalMs: opts.warnIntervalMs ?? 10_000,
    underPressure: () => queue.underPressure(),
    whenRelieved: (fn: () => void) => queue.whenRelieved(fn),
  }

  const binding = withHangupDetection(opts.binding ?? (SerialPort.binding as BindingInterface))
  for (const cfg of opts.boards) {
    if ((cfg.kind ?? 'serial') === 'firmata') {
      links.set(cfg.name, new FirmataLink(cfg, { ...deps, firmataIo: opts.firmataIo, binding: binding }))
      continue
    }
    links.set(cfg.name, new SerialLink(cfg, { ...deps, binding: binding }))
  }

  const stats = createStatsPublisher({
    intervalMs: opts.statsIntervalMs ?? 5000,
    boards: () => [...links.values()].map((l) => ({ name: l.name, stats: l.stats() })),
    publish: (board, payload) => retained(board, boardTopic(board, 'stats'), payload),
  })

  /** The board's link, or why a call about it fails at once (no such board, bridge closed). */
  function linkOf(
    board: string,
  ): { link: Link } | { ok: false; error: string; code: 'unknown_board' | 'closed' } {
    const link = links.get(board)
    if (!link)
      return {
        ok: false,
        error: `unknown board "${board}" (configured: ${[...links.keys()].join(', ') || 'none'})`,
        code: 'unknown_board',
      }
    if (closed) return { ok: false, error: 'bridge is closed', code: 'closed' }
    return { link }
  }

  function handover(board: string, how: 'release' | 'reclaim'): Promise<HandoverResult> {
    const found = linkOf(board)
    if (!('link' in found)) return Promise.resolve(found)
    const { link } = found
    const fn = link[how]?.bind(link)
    if (!fn)
      return Promise.resolve({
        ok: false,
        error: `board ${board} is a Firmata board: its port cannot be handed over (flash StandardFirmata with the hub stopped)`,
        code: 'unsupported',
      })
    return fn()
  }

  return {
    async start() {
      if (started) return
      started = true
      await Promise.all([...links.values()].map((l) => l.start()))
      stats.start()
    },
    send(board, cmd, args, o) {
      const found = linkOf(board)
      if (!('link' in found)) return Promise.resolve(found)
      return found.link.send(cmd, args, o?.timeoutMs)
    },
    release(board) {
      return handover(board, 'release')
    },
    reclaim(board) {
      return handover(board, 'reclaim')
    },
    onHello(fn) {
      helloListeners.add(fn)
      return () => void helloListeners.delete(fn)
    },
    stats() {
      const boards: Record<string, BoardStats> = {}
      for (const [name, l] of links) boards[name] = l.stats()
      return { boards, queue: queue.stats() }
    },
    async close() {
      if (closed) return
      closed = true
      await Promise.all([...links.values()].map((l) => l.close()))
      // The last counters, so what stays retained is what the bridge ended with.
      stats.stop()
      // Give the broker a moment to take the last events and the `offline` states.
      await queue.drain(2000)
      queue.close()
    },
  }
}
