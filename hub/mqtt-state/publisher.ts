// Publishes the hub's state topics (payloads.ts) and, when asked, Home Assistant discovery
// (ha-discovery.ts). Watches the engine (after each durable change) and the boards; the retained
// summaries go out at most once a second, coalesced, so a burst of runs costs one message.
import { join } from 'node:path'
import type { MqttClient } from 'mqtt'
import { fail } from '../../errors/codes.ts'
import { errorText } from '../../errors/text.ts'
import type { Diagnostic, Sop } from '../../sops/types.ts'
import type { HubEngine } from '../../sops/hub-engine.ts'
import type { Log } from '../log.ts'
import type { DirectPublish } from '../broker/direct-publish.ts'
import type { DiskView } from '../disk/view.ts'
import { writeFileAtomic } from '../../files/atomic-file.ts'
import { type Parsed, parseJson, readOrSetAside } from '../files/damaged-file.ts'
import { coalescer } from './coalesce.ts'
import { birthTopic, discoveryMessages, MAX_SIGNALS_PER_BOARD } from './ha-discovery.ts'
import {
  HUB_STATE_TOPIC,
  hubState,
  OFFLINE_STATE,
  PENDING_TOPIC,
  pendingApprovals,
  runChange,
  runKey,
  runTopic,
} from './payloads.ts'

export interface StateTopicsOptions {
  client: MqttClient
  /** Publishes without the client (the embedded broker's own publish, direct-publish.ts). */
  publish?: DirectPublish
  /**
   * False when a message on the topic would reach nobody (the embedded broker's `heard`): a run's
   * QoS 0 change is then not built. Unknown on an external broker, where every change is sent.
   */
  heard?: (topic: string) => boolean
  engine: HubEngine
  sops: () => readonly Sop[]
  diagnostics: () => readonly Diagnostic[]
  boards: readonly string[]
  clientId: string
  version: string
  /** `[homeassistant]`; discovery off = none of its topics are touched. */
  homeassistant: { discovery: boolean; prefix: string; nodeId: string }
  dataDir: string
  log: Log
  /** The disk guard's state for `svc/hub/state` (hub/disk/); call `changed()` when it changes. */
  disk?: () => DiskView | null
  /** Shortest gap between two retained summaries (default 1000 ms). */
  minIntervalMs?: number
  now?: () => number
}

export interface StateTopics {
  /** A board's availability changed (the bridge's callback, passed on). */
  board(name: string, state: 'online' | 'offline'): void
  /** Told of each bridge publish: a board's first event on a signal makes a discovery entity. */
  seen(topic: string, payload: string, opts: { retain: boolean }): void
  /** Something the snapshot shows changed outside the engine (a SOP reload). */
  changed(): void
  /** Publishes `offline` (retained) and stops. */
  close(): Promise<void>
}

/** The discovery state kept across restarts: which signals each board has sent, what was published. */
interface DiscoveryFile {
  signals: Record<string, Record<string, string>>
  topics: string[]
}

function parseDiscoveryFile(text: string): Parsed<DiscoveryFile> {
  const r = parseJson(text)
  if (!r.ok) return r
  const raw = r.value as Partial<DiscoveryFile> | null
  const isObject = (v: unknown): v is object => typeof v === 'object' && v !== null && !Array.isArray(v)
  if (
    !isObject(raw) ||
    (raw.signals !== undefined &&
      (!isObject(raw.signals) || !Object.values(raw.signals).every((v) => isObject(v)))) ||
    (raw.topics !== undefined &&
      (!Array.isArray(raw.topics) || !raw.topics.every((t) => typeof t === 'string')))
  )
    return fail('IO_FAILED', 'not { signals, topics }')
  return { ok: true, value: { signals: raw.signals ?? {}, topics: raw.topics ?? [] } }
}

/** Runs whose latest change is kept while the session cannot take them (about 200 bytes each). */
export const HELD_RUN_CHANGES = 10_000

export async function startStateTopics(o: StateTopicsOptions): Promise<StateTopics> {
  const now = o.now ?? Date.now
  const since = now()
  const gap = o.minIntervalMs ?? 1000
  const boards: Record<string, 'online' | 'offline'> = Object.fromEntries(
    o.boards.map((b) => [b, 'offline' as const]),
  )
  const lastRun = new Map<string, string>()
  let closed = false
  let timer: NodeJS.Timeout | null = null
  let dirty = false
  let lastSent = 0

  // Straight into the embedded broker when given one (direct-publish.ts), else by the session.
  const publish: DirectPublish =
    o.publish ?? ((topic, payload, opts) => o.client.publishAsync(topic, payload, opts).then(() => undefined))

  const send = (topic: string, payload: string, qos: 0 | 1, retain: boolean): void => {
    if (closed) return
    publish(topic, payload, { qos, retain }).catch((err: unknown) => {
      if (!closed) o.log.warn({ topic, err: errorText(err) }, 'state topic not published')
    })
  }

  // Run changes through a session to an external broker: while it is offline or its socket is
  // backed up, each run's latest change waits (coalesce.ts) for the socket to drain or the session
  // to come back. Sent anyway, mqtt.js would queue every change, each with a `drain` listener.
  // The embedded broker takes them straight away (direct-publish.ts).
  let armed: unknown = null
  const runChanges = o.publish
    ? null
    : coalescer({
        busy: () => !o.client.connected || o.client.stream?.writableNeedDrain === true,
        send: (topic, payload) => send(topic, payload, 0, false),
        max: HELD_RUN_CHANGES,
      })
  const caughtUp = (): void => {
    armed = null
    const counts = runChanges?.flush() ?? null
    if (counts === null) return arm()
    const entry = { ...counts, max: HELD_RUN_CHANGES }
    if (counts.dropped > 0)
      o.log.warn(
        entry,
        'run changes dropped while the broker connection was backed up (each run kept its latest)',
      )
    else o.log.debug?.(entry, 'run changes held while the broker connection was backed up are sent')
  }
  // Once a change is held: the socket's next `drain` (or the session's next connect) sends it.
  const arm = (): void => {
    if (!runChanges || runChanges.kept() === 0 || closed) return
    const stream = o.client.connected ? o.client.stream : null
    if (stream === null || armed === stream) return
    armed = stream
    stream.once('drain', caughtUp)
  }
  if (runChanges) o.client.on('connect', caughtUp)

  const publishSummaries = (): void => {
    dirty = false
    lastSent = now()
    const diagnostics = o.diagnostics()
    send(
      HUB_STATE_TOPIC,
      hubState({
        since,
        now: lastSent,
        clientId: o.clientId,
        version: o.version,
        sops: {
          loaded: o.sops().length,
          invalid: new Set(diagnostics.filter((d) => d.severity === 'error').map((d) => d.file)).size,
        },
        boards,
        live: o.engine.liveRuns(),
        kept: o.engine.keptTriggers(),
        disk: o.disk?.() ?? null,
      }),
      1,
      true,
    )
    send(PENDING_TOPIC, pendingApprovals(o.engine.pending()), 1, true)
  }

  const schedule = (): void => {
    if (closed) return
    dirty = true
    if (timer) return
    const wait = Math.max(0, lastSent + gap - now())
    timer = setTimeout(() => {
      timer = null
      if (dirty && !closed) publishSummaries()
    }, wait)
    timer.unref()
  }

  const unwatch = o.engine.watch((c) => {
    if (c.kind === 'run') {
      const key = runKey(c.run)
      if (lastRun.get(c.run.id) !== key) {
        const topic = runTopic(c.run.sop, c.run.id)
        if (topic && runChanges) {
          runChanges.offer(topic, runChange(c.run))
          arm()
        } else if (topic && (o.heard?.(topic) ?? true)) send(topic, runChange(c.run), 0, false)
        if (c.run.finishedAt !== undefined) lastRun.delete(c.run.id)
        else lastRun.set(c.run.id, key)
      }
    }
    schedule()
  })

  // ---- Home Assistant discovery ------------------------------------------------------------
  const ha = o.homeassistant
  const discoveryPath = join(o.dataDir, 'homeassistant-discovery.json')
  let known: DiscoveryFile = { signals: {}, topics: [] }
  let publishedTopics = new Set<string>()
  let saving: Promise<void> = Promise.resolve()
  const save = (): void => {
    const text = JSON.stringify(known)
    saving = saving
      .then(() => writeFileAtomic(discoveryPath, text))
      .catch((err: unknown) => o.log.warn({ err: errorText(err) }, 'discovery state not saved'))
  }
  const publishDiscovery = (): void => {
    const messages = discoveryMessages({
      prefix: ha.prefix,
      nodeId: ha.nodeId,
      version: o.version,
      boards: o.boards.map((name) => ({
        name,
        signals: Object.entries(known.signals[name] ?? {}).map(([s, sample]) => ({ name: s, sample })),
      })),
    })
    const wanted = new Set(messages.map((m) => m.topic))
    // Entities of boards no longer in hub.toml go away (an empty retained config removes them).
    for (const t of [...publishedTopics, ...known.topics]) if (!wanted.has(t)) send(t, '', 1, true)
    for (const m of messages) send(m.topic, m.payload, 1, true)
    publishedTopics = wanted
    known.topics = [...wanted]
    save()
  }
  const onMessage = (topic: string, payload: Buffer): void => {
    if (topic === birthTopic(ha.prefix) && payload.toString() === 'online') publishDiscovery()
  }
  // Without the file the hub forgets which signals each board has sent and what it published
  // (hub/files/README.md: Small files): the signals come back as the boards report them.
  const saved = await readOrSetAside(discoveryPath, parseDiscoveryFile, {
    log: o.log,
    instead: ha.discovery
      ? 'Home Assistant discovery starts afresh: board signals reappear as they report; entities of boards no longer in hub.toml stay in Home Assistant until deleted there'
      : 'entities this hub published in Home Assistant before discovery was turned off are not removed; delete them there',
  })
  if (ha.discovery) {
    if (saved) known = saved
    o.client.on('message', onMessage)
    await o.client.subscribeAsync(birthTopic(ha.prefix), { qos: 1 }).catch((err: unknown) => {
      o.log.warn({ err: errorText(err) }, 'cannot subscribe to Home Assistant status')
    })
    publishDiscovery()
  } else {
    // Discovery turned off: entities this hub published before are removed, once.
    if (saved) {
      for (const t of saved.topics) send(t, '', 1, true)
      known = { signals: saved.signals, topics: [] }
      save()
    }
  }

  publishSummaries()

  return {
    board(name, state) {
      if (boards[name] === state) return
      boards[name] = state
      schedule()
    },
    seen(topic, payload, opts) {
      // Board events are the bridge's non-retained publishes (info, stats, availability are retained).
      if (!ha.discovery || opts.retain) return
      const levels = topic.split('/')
      const board = levels[1] as string
      const signal = levels[2] as string
      if (levels.length !== 3 || levels[0] !== 'boards' || !o.boards.includes(board)) return
      const seen = (known.signals[board] ??= {})
      if (signal in seen || Object.keys(seen).length >= MAX_SIGNALS_PER_BOARD) return
      seen[signal] = payload.slice(0, 1024)
      publishDiscovery()
    },
    changed: schedule,
    async close() {
      if (closed) return
      closed = true
      unwatch()
      if (timer) clearTimeout(timer)
      o.client.off('message', onMessage)
      o.client.off('connect', caughtUp)
      await publish(HUB_STATE_TOPIC, OFFLINE_STATE, { qos: 1, retain: true }).catch(() => undefined)
      await saving
    },
  }
}
