// The metrics GET /metrics serves, as prom-client metrics whose collect() fills them from one
// snapshot per scrape (snapshot.ts), plus prom-client's default process metrics (resident
// memory, heap, event-loop lag, GC). Loaded on the first scrape only (index.ts), so a hub nobody
// scrapes never loads prom-client. Labels are bounded by config: per SOP, per board, and the
// fixed sets of trigger kinds, outcomes and states; nothing per run, event or client.
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client'
import { ATTEST_STATES } from '../attest/record.ts'
import { RUN_STATES, isFinished, isParked } from '../../sops/run/states.ts'
import { KEY_SEP } from './counts.ts'
import type { Snapshot } from './snapshot.ts'

type Labels = Record<string, string | number>
type Put = (labels: Labels, value: number) => void

/** Which optional parts this hub has: their metrics exist only where the part does. */
export interface MetricParts {
  broker: boolean
  mqtt: boolean
  bridge: boolean
  attest: boolean
  attestSync: boolean
  /** statfs answered for the data folder. */
  filesystem: boolean
  /** /proc/self/io could be read (Linux). */
  io: boolean
}

const UNFINISHED = RUN_STATES.filter((s) => !isFinished(s))
const SYNC_STATES = ['idle', 'syncing', 'waiting', 'stuck', 'retrying'] as const
const BOARD_STATES = ['connecting', 'silent', 'online', 'offline', 'updating', 'closed'] as const

/** A board counter of bridge.stats() and the metric it becomes. */
const BOARD_COUNTERS = [
  ['hellos', 'svc_board_hellos_total', 'hello lines received (more than one: the board rebooted)'],
  ['lines', 'svc_board_lines_total', 'complete lines received within the line cap'],
  ['events', 'svc_board_events_total', 'events accepted for publishing'],
  ['published', 'svc_board_events_published_total', 'events the broker acknowledged'],
  ['dropped', 'svc_board_events_dropped_total', 'events dropped because the publish queue was full'],
  ['oversized', 'svc_board_lines_oversized_total', 'lines dropped whole for passing the line cap'],
  ['garbage', 'svc_board_lines_garbage_total', 'lines that were not a valid hello, message or reply'],
  ['unmatched', 'svc_board_replies_unmatched_total', 'replies that matched no waiting command (late)'],
  ['reconnects', 'svc_board_reconnects_total', 're-opens of the port after it was lost'],
  ['commands', 'svc_board_commands_total', 'commands sent to the board'],
  ['timeouts', 'svc_board_command_timeouts_total', 'commands the board did not answer in time'],
] as const

export interface MetricsRegistry {
  contentType: string
  /** The text of one scrape; scrapes that overlap run one after the other. */
  metrics(): Promise<string>
}

export function createMetricsRegistry(take: () => Promise<Snapshot>, parts: MetricParts): MetricsRegistry {
  const registry = new Registry()
  let current: Promise<Snapshot> = Promise.reject(new Error('no scrape under way'))
  current.catch(() => undefined)

  const def = (
    type: 'gauge' | 'counter',
    name: string,
    help: string,
    labelNames: readonly string[],
    fill: (s: Snapshot, put: Put) => void,
  ): void => {
    const config = { name, help, labelNames: [...labelNames], registers: [registry] }
    if (type === 'gauge') {
      new Gauge({
        ...config,
        async collect() {
          const s = await current
          this.reset()
          fill(s, (labels, v) => this.set(labels, v))
        },
      })
    } else {
      new Counter({
        ...config,
        async collect() {
          const s = await current
          this.reset()
          fill(s, (labels, v) => this.inc(labels, v))
        },
      })
    }
  }
  const one = (type: 'gauge' | 'counter', name: string, help: string, value: (s: Snapshot) => number) =>
    def(type, name, help, [], (s, put) => put({}, value(s)))
  const ageSeconds = (s: Snapshot, at: number) => Math.max(0, (s.now - at) / 1000)

  // ---- the hub and its SOPs
  def(
    'gauge',
    'svc_hub_info',
    'The hub: its version and whether its broker is embedded or external (always 1)',
    ['version', 'broker'],
    (s, put) => put({ version: s.version, broker: s.brokerKind }, 1),
  )
  one('gauge', 'svc_sops_loaded', 'SOPs loaded and running', (s) => s.sops.loaded)
  one(
    'gauge',
    'svc_sops_invalid',
    'SOP folders that failed to load (svc sop validate says why)',
    (s) => s.sops.invalid,
  )

  // ---- events and runs
  def(
    'counter',
    'svc_trigger_events_total',
    'Events handed to admission since the hub started, by trigger kind and admission outcome (one per SOP an event is offered to)',
    ['kind', 'outcome'],
    (s, put) => {
      for (const [key, n] of s.counts.events) {
        const [kind, outcome] = key.split(KEY_SEP) as [string, string]
        put({ kind, outcome }, n)
      }
    },
  )
  def(
    'counter',
    'svc_runs_started_total',
    'Runs started since the hub started, by SOP',
    ['sop'],
    (s, put) => {
      for (const sop of s.sopNames) put({ sop }, s.counts.runsStarted.get(sop) ?? 0)
    },
  )
  def(
    'counter',
    'svc_runs_finished_total',
    'Runs finished since the hub started, by SOP and final state (completed, failed, cancelled)',
    ['sop', 'state'],
    (s, put) => {
      for (const sop of s.sopNames)
        for (const state of ['completed', 'failed', 'cancelled'])
          put({ sop, state }, s.counts.runsFinished.get(sop + KEY_SEP + state) ?? 0)
    },
  )
  def(
    'gauge',
    'svc_runs_unfinished',
    'Runs not finished, by SOP and current state (pending, running, waiting_approval, paused_checkpoint)',
    ['sop', 'state'],
    (s, put) => {
      const by = new Map<string, number>()
      for (const r of s.live) by.set(r.sop + KEY_SEP + r.state, (by.get(r.sop + KEY_SEP + r.state) ?? 0) + 1)
      for (const sop of s.sopNames)
        for (const state of UNFINISHED) put({ sop, state }, by.get(sop + KEY_SEP + state) ?? 0)
    },
  )
  def(
    'gauge',
    'svc_approvals_pending',
    'Runs parked at a gate waiting for a person, by SOP',
    ['sop'],
    (s, put) => {
      const by = new Map<string, number>()
      for (const r of s.live) if (isParked(r.state)) by.set(r.sop, (by.get(r.sop) ?? 0) + 1)
      for (const sop of s.sopNames) put({ sop }, by.get(sop) ?? 0)
    },
  )
  def(
    'gauge',
    'svc_approvals_oldest_age_seconds',
    'How long the oldest run parked at a gate has waited, by SOP (no series when none waits)',
    ['sop'],
    (s, put) => {
      const oldest = new Map<string, number>()
      for (const r of s.live) {
        if (!isParked(r.state)) continue
        const since = r.gate?.since ?? r.updatedAt
        if (since < (oldest.get(r.sop) ?? Number.POSITIVE_INFINITY)) oldest.set(r.sop, since)
      }
      for (const [sop, at] of oldest) put({ sop }, ageSeconds(s, at))
    },
  )
  def(
    'gauge',
    'svc_triggers_kept',
    'Triggers kept for later by admission, by SOP and kind (held: the hold policy; deferred: parallel past max_concurrent)',
    ['sop', 'kind'],
    (s, put) => {
      const by = new Map(s.kept.map((b) => [b.sop, b]))
      for (const sop of s.sopNames) {
        put({ sop, kind: 'held' }, by.get(sop)?.held ?? 0)
        put({ sop, kind: 'deferred' }, by.get(sop)?.deferred ?? 0)
      }
    },
  )
  def(
    'gauge',
    'svc_triggers_kept_oldest_age_seconds',
    'How long the oldest kept trigger has waited, by SOP (no series when none is kept)',
    ['sop'],
    (s, put) => {
      for (const b of s.kept) put({ sop: b.sop }, b.oldestAgeMs / 1000)
    },
  )
  one(
    'gauge',
    'svc_run_history_span_seconds',
    'Age of the oldest run in the engine store: how far back the run history goes (0 with no runs)',
    (s) => (s.oldestRunAt === null ? 0 : ageSeconds(s, s.oldestRunAt)),
  )

  // ---- MQTT: the hub's session and the trigger intake
  one('gauge', 'svc_mqtt_session_connected', "1 while the hub's own MQTT session is connected", (s) =>
    s.sessionConnected ? 1 : 0,
  )
  if (parts.mqtt) {
    const m = (f: (b: NonNullable<Snapshot['mqtt']>) => number) => (s: Snapshot) => (s.mqtt ? f(s.mqtt) : 0)
    one(
      'gauge',
      'svc_mqtt_trigger_in_flight',
      'MQTT trigger messages received and not yet admitted (their PUBACK waits)',
      m((b) => b.inFlight),
    )
    one(
      'gauge',
      'svc_mqtt_trigger_in_flight_peak',
      'The most MQTT trigger messages in flight at once since the hub started',
      m((b) => b.peak),
    )
    one(
      'gauge',
      'svc_mqtt_trigger_in_flight_cap',
      'In-flight MQTT trigger messages at which the hub stops reading more',
      m((b) => b.cap),
    )
    one(
      'gauge',
      'svc_mqtt_trigger_busy_seconds',
      'Seconds MQTT trigger messages have been in flight without a break (0: keeping up)',
      m((b) => b.busySeconds),
    )
    one(
      'counter',
      'svc_mqtt_trigger_paused_total',
      'Times the hub stopped reading MQTT trigger messages at the cap',
      m((b) => b.paused),
    )
    one(
      'counter',
      'svc_mqtt_trigger_behind_total',
      'Busy stretches of 5 s or more (each one logged as the hub being behind)',
      m((b) => b.behind),
    )
    one(
      'counter',
      'svc_mqtt_trigger_repeats_total',
      'Redelivered MQTT messages recognised as already admitted',
      m((b) => b.repeats),
    )
  }

  // ---- the embedded broker (Aedes)
  if (parts.broker) {
    const b = (f: (x: NonNullable<Snapshot['broker']>) => number) => (s: Snapshot) =>
      s.broker ? f(s.broker) : 0
    one(
      'gauge',
      'svc_broker_clients_connected',
      'MQTT clients connected to the embedded broker',
      b((x) => x.clients),
    )
    one(
      'gauge',
      'svc_broker_messages_in_flight',
      "Messages the embedded broker's emitter is delivering now",
      b((x) => x.inFlight),
    )
    one(
      'gauge',
      'svc_broker_messages_queued',
      "Messages waiting for a free slot of the embedded broker's emitter",
      b((x) => x.queued),
    )
    one(
      'counter',
      'svc_broker_messages_total',
      'Messages the embedded broker has routed since the hub started (its own included)',
      b((x) => x.messages),
    )
  }

  // ---- boards (bridge.stats())
  if (parts.bridge) {
    const boards = (s: Snapshot) => Object.entries(s.bridge?.boards ?? {})
    def(
      'gauge',
      'svc_board_available',
      '1 while the board is online (answering), else 0',
      ['board'],
      (s, put) => {
        for (const [board, b] of boards(s)) put({ board }, b.state === 'online' ? 1 : 0)
      },
    )
    def(
      'gauge',
      'svc_board_state',
      "The board's link state: 1 for the current one (connecting, silent, online, offline, updating, closed)",
      ['board', 'state'],
      (s, put) => {
        for (const [board, b] of boards(s))
          for (const state of BOARD_STATES) put({ board, state }, b.state === state ? 1 : 0)
      },
    )
    for (const [field, name, help] of BOARD_COUNTERS)
      def('counter', name, `Per board since the hub started: ${help}`, ['board'], (s, put) => {
        for (const [board, b] of boards(s)) put({ board }, b[field])
      })
    def(
      'gauge',
      'svc_board_last_event_timestamp_seconds',
      "When the board's last event arrived (no series before the first)",
      ['board'],
      (s, put) => {
        for (const [board, b] of boards(s)) {
          const at = b.last_event_at === null ? Number.NaN : Date.parse(b.last_event_at)
          if (Number.isFinite(at)) put({ board }, at / 1000)
        }
      },
    )
    const q = (f: (x: NonNullable<Snapshot['bridge']>['queue']) => number) => (s: Snapshot) =>
      s.bridge ? f(s.bridge.queue) : 0
    one(
      'gauge',
      'svc_bridge_queue_pending',
      "Board events waiting in the bridge's publish queue",
      q((x) => x.pending),
    )
    one(
      'gauge',
      'svc_bridge_queue_in_flight',
      'Board events published and not yet acknowledged by the broker',
      q((x) => x.inflight),
    )
    one(
      'counter',
      'svc_bridge_queue_delivered_total',
      'Board events the broker acknowledged',
      q((x) => x.delivered),
    )
    one(
      'counter',
      'svc_bridge_queue_dropped_total',
      'Board events dropped because the publish queue was full',
      q((x) => x.dropped),
    )
    one(
      'counter',
      'svc_bridge_queue_retries_total',
      'Board event publishes retried',
      q((x) => x.retries),
    )
  }

  // ---- attestation
  if (parts.attest) {
    def(
      'gauge',
      'svc_attest_lines',
      'Attested lines in the store, by state (pending, sending, requested, attested, failed)',
      ['state'],
      (s, put) => {
        for (const state of ATTEST_STATES) put({ state }, s.attest?.counts[state] ?? 0)
      },
    )
    one(
      'gauge',
      'svc_attest_oldest_unsynced_age_seconds',
      'Age of the oldest line neither attested nor failed (0 when every line is synced)',
      (s) => (s.attest?.oldestUnsyncedAt != null ? ageSeconds(s, s.attest.oldestUnsyncedAt) : 0),
    )
  }
  if (parts.attestSync)
    def(
      'gauge',
      'svc_attest_sync_state',
      "The attestation sync's state: 1 for the current one",
      ['state'],
      (s, put) => {
        const now = s.attest?.sync?.state
        for (const state of SYNC_STATES) put({ state }, now === state ? 1 : 0)
      },
    )

  // ---- disk
  def(
    'gauge',
    'svc_store_size_bytes',
    'Bytes on disk of each store (folder) under the data folder',
    ['store'],
    (s, put) => {
      for (const x of s.stores) put({ store: x.store }, x.bytes)
    },
  )
  // A source that answered at the first scrape and not at this one reads NaN, not a false 0.
  if (parts.filesystem) {
    one(
      'gauge',
      'svc_data_filesystem_avail_bytes',
      "Bytes the hub may still write on the data folder's filesystem",
      (s) => s.filesystem?.availBytes ?? Number.NaN,
    )
    one(
      'gauge',
      'svc_data_filesystem_size_bytes',
      "Size of the data folder's filesystem",
      (s) => s.filesystem?.sizeBytes ?? Number.NaN,
    )
  }
  if (parts.io) {
    one(
      'counter',
      'svc_process_disk_written_bytes_total',
      'Bytes the hub process caused to be written to storage (/proc/self/io write_bytes)',
      (s) => s.io?.writeBytes ?? Number.NaN,
    )
    one(
      'counter',
      'svc_process_disk_read_bytes_total',
      'Bytes the hub process caused to be read from storage (/proc/self/io read_bytes)',
      (s) => s.io?.readBytes ?? Number.NaN,
    )
  }

  collectDefaultMetrics({ register: registry })

  let queue: Promise<unknown> = Promise.resolve()
  return {
    contentType: registry.contentType,
    metrics() {
      const run = queue.then(async () => {
        current = take()
        current.catch(() => undefined)
        return registry.metrics()
      })
      queue = run.catch(() => undefined)
      return run
    },
  }
}
