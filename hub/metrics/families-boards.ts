// The boards' families, from bridge.stats() (what `svc board status` prints): availability and
// link state per board, each board's counters, and the bridge's publish queue.
import type { BoardStats } from '../../bridge/types.ts'
import { type Family, single } from './family.ts'
import type { Snapshot } from './snapshot.ts'

const BOARD_STATES = ['connecting', 'silent', 'online', 'offline', 'updating', 'closed'] as const

type NumericField = {
  [K in keyof BoardStats]-?: BoardStats[K] extends number ? K : never
}[keyof BoardStats]

/** A counter of bridge.stats() and the metric it becomes. */
const BOARD_COUNTERS: readonly (readonly [NumericField, string, string])[] = [
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
]

const boards = (s: Snapshot) => Object.entries(s.bridge?.boards ?? {})

export function boardFamilies(): Family[] {
  const q = (f: (x: NonNullable<Snapshot['bridge']>['queue']) => number) => (s: Snapshot) =>
    s.bridge ? f(s.bridge.queue) : 0
  return [
    {
      type: 'gauge',
      name: 'svc_board_available',
      help: '1 while the board is online (answering), else 0',
      labels: ['board'],
      fill: (s, put) => {
        for (const [board, b] of boards(s)) put({ board }, b.state === 'online' ? 1 : 0)
      },
    },
    {
      type: 'gauge',
      name: 'svc_board_state',
      help: "The board's link state: 1 for the current one (connecting, silent, online, offline, updating, closed)",
      labels: ['board', 'state'],
      fill: (s, put) => {
        for (const [board, b] of boards(s))
          for (const state of BOARD_STATES) put({ board, state }, b.state === state ? 1 : 0)
      },
    },
    ...BOARD_COUNTERS.map(
      ([field, name, help]): Family => ({
        type: 'counter',
        name,
        help: `Per board since the hub started: ${help}`,
        labels: ['board'],
        fill: (s, put) => {
          for (const [board, b] of boards(s)) put({ board }, b[field])
        },
      }),
    ),
    {
      type: 'gauge',
      name: 'svc_board_last_event_timestamp_seconds',
      help: "When the board's last event arrived (no series before the first)",
      labels: ['board'],
      fill: (s, put) => {
        for (const [board, b] of boards(s)) {
          const at = b.last_event_at === null ? Number.NaN : Date.parse(b.last_event_at)
          if (Number.isFinite(at)) put({ board }, at / 1000)
        }
      },
    },
    single(
      'gauge',
      'svc_bridge_queue_pending',
      "Board events waiting in the bridge's publish queue",
      q((x) => x.pending),
    ),
    single(
      'gauge',
      'svc_bridge_queue_in_flight',
      'Board events published and not yet acknowledged by the broker',
      q((x) => x.inflight),
    ),
    single(
      'counter',
      'svc_bridge_queue_delivered_total',
      'Board events the broker acknowledged',
      q((x) => x.delivered),
    ),
    single(
      'counter',
      'svc_bridge_queue_dropped_total',
      'Board events dropped because the publish queue was full',
      q((x) => x.dropped),
    ),
    single(
      'counter',
      'svc_bridge_queue_retries_total',
      'Board event publishes retried',
      q((x) => x.retries),
    ),
  ]
}
