// `svc sop runs|status|logs` (run history: from the running hub, else from its stored records)
// and `svc sop trigger|held` (the live hub only): what the hub ran, what it runs, what waits.
import type { AdmissionDecision } from '../sops/engine-api.ts'
import type { RunFilter, RunPage } from '../sops/hub-engine.ts'
import type { SopBacklog } from '../sops/run/backlog.ts'
import { RUN_STATES, type RunState } from '../sops/run/states.ts'
import { parseTimeArg } from '../hub/api/time-arg.ts'
import { callHub, requestHub } from './hub-client.ts'
import { type CliIo, EXIT_FAIL, EXIT_OK, UsageError, UserError } from './io.ts'
import { keptLine } from '../hub/history/view.ts'
import { openRunSource, type RunSource } from './run-source.ts'
import { heldText, logText, runsTable, statusText } from './run-text.ts'
import { type Flags, one, parseFlags, payloadFlag } from './sop-flags.ts'

export const HISTORY_HELP = `  svc sop runs [--sop NAME] [--state STATE] [--since T] [--until T] [--limit N] [--cursor C] [--json]
                                                run history, newest first, a page at a time
                                                (T: an ISO date or time, or a span back: 30m, 2h, 7d);
                                                says how far back the history is kept
  svc sop status <run_id> [--json]              a run whole: trigger payload, each step's input,
                                                output, result and duration, approvals, state
  svc sop logs <run_id> [--json]                the run's log
                                                (runs, status, logs: from the running hub, else
                                                from its stored records)
  svc sop trigger <name> [--payload JSON] [--json]
                                                a real run on the running hub; prints its id
  svc sop held [--json]                         triggers kept by hold/parallel, per SOP`

export const HISTORY_COMMANDS = new Set(['runs', 'status', 'logs', 'trigger', 'held'])

function runFilter(f: Flags): RunFilter {
  if (f.state !== undefined && !(RUN_STATES as readonly string[]).includes(f.state))
    throw new UsageError(`--state "${f.state}" is not one of ${RUN_STATES.join(', ')}`)
  const now = Date.now()
  const time = (flag: '--since' | '--until', v: string | undefined): number | undefined => {
    if (v === undefined) return undefined
    const t = parseTimeArg(v, now)
    if (!t.ok) throw new UsageError(`${flag}: ${t.error}`)
    return t.ms
  }
  const since = time('--since', f.since)
  const until = time('--until', f.until)
  return {
    limit: f.limit ?? 50,
    ...(f.sop !== undefined ? { sop: f.sop } : {}),
    ...(f.state !== undefined ? { state: f.state as RunState } : {}),
    ...(since !== undefined ? { since } : {}),
    ...(until !== undefined ? { until } : {}),
    ...(f.cursor !== undefined ? { cursor: f.cursor } : {}),
  }
}

/** The same command for the next page: what the user typed, the cursor replaced. */
function moreHint(argv: string[], next: string): string {
  const kept: string[] = []
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!
    if (a === '--cursor') i++
    else if (!a.startsWith('--cursor='))
      kept.push(/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`)
  }
  return `more: svc sop runs ${[...kept, '--cursor', next].join(' ')}`
}

async function withSource<T>(io: CliIo, fn: (s: RunSource) => Promise<T>): Promise<T> {
  const source = await openRunSource(io)
  try {
    return await fn(source)
  } finally {
    await source.close()
  }
}

async function runs(argv: string[], io: CliIo): Promise<number> {
  const f = parseFlags(
    'runs',
    argv,
    ['--json', '--sop', '--state', '--since', '--until', '--limit', '--cursor'],
    HISTORY_HELP,
  )
  if (f.positional.length > 0) throw new UsageError(`sop runs takes no arguments (got "${f.positional[0]}")`)
  const filter = runFilter(f)
  const { page, label, history } = await withSource(io, async (s) => ({
    page: await s.queryRuns(filter),
    label: s.label,
    history: f.json ? null : await s.history(),
  }))
  if (f.json) {
    io.out(JSON.stringify({ source: label, ...page } satisfies RunPage & { source: string }, null, 2))
    return EXIT_OK
  }
  io.out(`runs from ${label}`)
  if (history) io.out(keptLine(history, Date.now()))
  io.out(runsTable(page.runs, Date.now()))
  if (page.next !== null) io.out(moreHint(argv, page.next))
  return EXIT_OK
}

async function status(argv: string[], io: CliIo): Promise<number> {
  const f = parseFlags('status', argv, ['--json'], HISTORY_HELP)
  const id = one('status', f, 'run id')
  const { run, label } = await withSource(io, async (s) => ({ run: await s.getRun(id), label: s.label }))
  if (!run) throw new UserError(`no run with id "${id}" in ${label}`)
  if (f.json) io.out(JSON.stringify({ source: label, run }, null, 2))
  else {
    io.out(`from ${label}`)
    io.out(statusText(run, Date.now()))
  }
  return EXIT_OK
}

async function logs(argv: string[], io: CliIo): Promise<number> {
  const f = parseFlags('logs', argv, ['--json'], HISTORY_HELP)
  const id = one('logs', f, 'run id')
  const { run, label } = await withSource(io, async (s) => ({ run: await s.getRun(id), label: s.label }))
  if (!run) throw new UserError(`no run with id "${id}" in ${label}`)
  if (f.json) {
    // stdout stays the log array (scripts parse it); the source goes to stderr.
    io.err(`from ${label}`)
    io.out(JSON.stringify(run.log, null, 2))
  } else {
    io.out(`from ${label}`)
    io.out(logText(run.log) || '(no log entries)')
  }
  return EXIT_OK
}

async function trigger(argv: string[], io: CliIo): Promise<number> {
  const f = parseFlags('trigger', argv, ['--json', '--payload'], HISTORY_HELP)
  const name = one('trigger', f, 'SOP name')
  const payload = payloadFlag(f)
  const r = await requestHub(io, 'POST', `/sop/${encodeURIComponent(name)}/trigger`, { payload })
  const error = (r.body as { error?: string }).error
  if (r.status === 404)
    throw new UserError(
      `${error ?? `no SOP named "${name}"`} on the running hub (svc sop list shows what it loads)`,
    )
  if (r.status >= 400) throw new UserError(error ?? `the hub answered ${r.status}`)
  const d = r.body as AdmissionDecision
  const accepted = ['started', 'held', 'deferred', 'coalesced'].includes(d.outcome)
  if (f.json) io.out(JSON.stringify(d, null, 2))
  else if (d.outcome === 'started')
    io.out(`started run ${d.runId} of ${name}\n  follow it: svc sop status ${d.runId}`)
  else if (d.outcome === 'coalesced') io.out(`coalesced into run ${d.runId} of ${name}: ${d.reason}`)
  else if (accepted)
    io.out(
      `${d.outcome}: ${d.reason}\n  no run yet; it starts when admission allows (svc sop held shows the backlog)`,
    )
  else io.err(`svc sop: not started (${d.outcome}): ${d.reason}`)
  return accepted ? EXIT_OK : EXIT_FAIL
}

async function held(argv: string[], io: CliIo): Promise<number> {
  const f = parseFlags('held', argv, ['--json'], HISTORY_HELP)
  if (f.positional.length > 0) throw new UsageError(`sop held takes no arguments (got "${f.positional[0]}")`)
  const r = (await callHub(io, 'GET', '/sop/held')) as { now: number; sops: SopBacklog[] }
  io.out(f.json ? JSON.stringify(r, null, 2) : heldText(r.sops))
  return EXIT_OK
}

export function historyCommand(sub: string, argv: string[], io: CliIo): Promise<number> {
  switch (sub) {
    case 'runs':
      return runs(argv, io)
    case 'status':
      return status(argv, io)
    case 'logs':
      return logs(argv, io)
    case 'trigger':
      return trigger(argv, io)
    default:
      return held(argv, io)
  }
}
