// `svc hub status`: the running hub's state from its local API (`GET /hub/status`,
// hub/api/status.ts): the process, the broker, SOPs, runs, kept triggers, boards, and the MQTT
// session's backlog, said plainly when the hub is behind its broker and which limit drops next.
import type { HubStatus } from '../hub/api/status.ts'
import { diskLine } from '../hub/disk/view.ts'
import { historyLine } from '../hub/history/view.ts'
import { callHub } from './hub-client.ts'
import { type CliIo, EXIT_OK, UsageError } from './io.ts'
import { parseOptions } from './options.ts'

export const STATUS_HELP = `usage: svc hub status [--json]

The running hub's state, from its local API: since when and which process, the broker (embedded
or external, connected or not, and where events wait while the hub is behind), SOPs loaded, runs
by state, held and deferred triggers, boards, the disk (REFUSING new work while below its reserve,
hub/README.md "A full disk"), how far back the run history reaches and its size against
hub.toml [history], and the MQTT session's backlog: events being
admitted now (in flight), the most at once (peak), times reading stopped at the cap, busy
stretches warned about (behind), redelivered events recognised (repeats). --json prints the
hub's answer as is (GET /hub/status).`

function duration(s: number): string {
  const d = Math.floor(s / 86_400)
  const h = Math.floor((s % 86_400) / 3600)
  const m = Math.floor((s % 3600) / 60)
  const parts = [d && `${d}d`, (d || h) && `${h}h`, (d || h || m) && `${m}m`, `${s % 60}s`]
  return parts.filter(Boolean).join(' ')
}

const times = (n: number): string => `${n} time${n === 1 ? '' : 's'}`

/** The status as lines of `label  text`, for a terminal. */
export function formatHubStatus(s: HubStatus): string {
  const rows: [string, string][] = []
  rows.push([
    'hub',
    `${s.state} since ${s.since} (up ${duration(s.uptime_s)}), pid ${s.pid}, version ${s.version}, client id ${s.client_id}`,
  ])
  rows.push([
    'broker',
    `${s.broker.kind} ${s.broker.url}, ${s.broker.connected ? 'connected' : 'NOT CONNECTED'}`,
  ])
  rows.push(['', `events not read yet wait in ${s.broker.queue_limit}`])
  rows.push(['sops', `${s.sops.loaded} loaded, ${s.sops.invalid} invalid`])
  const r = s.runs as Record<string, number>
  rows.push([
    'runs',
    `${r.pending ?? 0} pending, ${r.running ?? 0} running, ${r.waiting_approval ?? 0} waiting for approval, ${r.paused_checkpoint ?? 0} paused at a checkpoint`,
  ])
  const kept = (k: { count: number; oldest_at: string | null }, what: string) =>
    `${k.count} ${what}${k.oldest_at ? ` (oldest ${k.oldest_at})` : ''}`
  rows.push(['triggers', `${kept(s.held, 'held')}, ${kept(s.deferred, 'deferred')}`])
  const boards = Object.entries(s.boards)
  if (boards.length > 0) rows.push(['boards', boards.map(([n, st]) => `${n} ${st}`).join(', ')])
  if (s.disk) rows.push(['disk', diskLine(s.disk)])
  if (s.history) rows.push(['history', historyLine(s.history, Date.parse(s.at))])
  const m = s.mqtt
  if (!m) rows.push(['mqtt', 'no MQTT trigger session'])
  else {
    const counters = `peak ${m.peak} of ${m.cap}, reading stopped ${times(m.paused)}, behind ${times(m.behind)}, ${m.repeats} repeats`
    if (!m.lagging) rows.push(['mqtt', `keeping up: ${m.inFlight} in flight (${counters})`])
    else {
      rows.push([
        'mqtt',
        `BEHIND: ${m.inFlight} in flight${m.busySeconds > 0 ? ` without a break for ${m.busySeconds} s` : ''} (${counters})`,
      ])
      if (s.broker.kind === 'external')
        rows.push([
          '',
          'raise that limit if events go missing: hub/README.md, "Falling behind an external broker"',
        ])
    }
  }
  const width = Math.max(...rows.map(([l]) => l.length))
  return rows.map(([l, text]) => `${l.padEnd(width)}  ${text}`).join('\n')
}

export async function command(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseOptions(
    argv,
    { json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
    'svc hub status --help',
  )
  if (values.help) {
    io.out(STATUS_HELP)
    return EXIT_OK
  }
  if (positionals.length > 0)
    throw new UsageError(`unexpected argument "${positionals[0]}"\n\n${STATUS_HELP}`)
  const s = (await callHub(io, 'GET', '/hub/status')) as HubStatus
  io.out(values.json ? JSON.stringify(s, null, 2) : formatHubStatus(s))
  return EXIT_OK
}
