// How `svc sop pending|runs|status|logs|held` print runs for a person (pure: records and the
// time in, text out). `--json` prints the records themselves instead.
import type { RunSummary } from '../sops/hub-engine.ts'
import type { SopBacklog } from '../sops/run/backlog.ts'
import { type LogEntry, type RunRecord, type StepRecord, payloadAsInput } from '../sops/run/record.ts'
import type { Json } from '../sops/types.ts'
import { age } from '../hub/history/view.ts'

/** Milliseconds under a second, tenths of a second under a minute, else as `age`. */
export function took(ms: number): string {
  const v = Math.max(0, ms)
  return v < 1000 ? `${Math.round(v)} ms` : v < 60_000 ? `${(v / 1000).toFixed(1)}s` : age(v)
}

const when = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z')

export function pendingText(runs: RunSummary[], now: number): string {
  if (runs.length === 0) return 'no runs waiting for approval'
  const lines: string[] = []
  for (const r of runs) {
    const g = r.gate
    lines.push(
      `${r.id}  ${r.sop}  ${r.state}  step ${g?.step ?? r.current ?? '-'}  waiting ${age(now - (g?.since ?? r.updatedAt))}  ${g?.reason ?? ''}${g?.operatorOnly ? '  [operator only]' : ''}`,
    )
    if (g?.prompt) lines.push(`    prompt: ${g.prompt}`)
    for (const q of g?.questions ?? [])
      lines.push(`    question for step ${q.step}: ${q.question}  (answer with --decide ${q.step}=yes|no)`)
    for (const req of g?.requests ?? [])
      lines.push(`    approval requested by ${req.by}${req.note ? `: ${req.note}` : ''}`)
  }
  return lines.join('\n')
}

export function logText(log: LogEntry[]): string {
  return log
    .map(
      (l) =>
        `${new Date(l.at).toISOString()}  ${l.step === 0 ? 'run   ' : `step ${String(l.step).padEnd(2)}`}  ${l.level.padEnd(5)}  ${l.msg}`,
    )
    .join('\n')
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((row) => (row[c] ?? '').length)))
  return rows
    .map((row) => row.map((cell, c) => (c === row.length - 1 ? cell : cell.padEnd(widths[c]!))).join('  '))
    .join('\n')
}

/** One line per run, newest first: id, SOP, state, when it was created, how long it took or has waited. */
export function runsTable(runs: RunSummary[], now: number): string {
  if (runs.length === 0) return '(no runs match)'
  return table([
    ['RUN', 'SOP', 'STATE', 'CREATED', 'TOOK', 'DETAIL'],
    ...runs.map((r) => [
      r.id,
      r.sop,
      r.state,
      when(r.createdAt),
      r.finishedAt !== undefined ? took(r.finishedAt - r.createdAt) : `${age(now - r.createdAt)} so far`,
      r.finishedAt !== undefined
        ? (r.error ?? '')
        : r.gate
          ? `step ${r.gate.step}: ${r.gate.reason}`
          : r.current !== null
            ? `step ${r.current}`
            : '',
    ]),
  ])
}

/** Compact JSON for a terminal: whole when short, cut with a note when long. */
function shown(v: Json | undefined, max = 400): string {
  if (v === undefined) return '-'
  const s = JSON.stringify(v)
  return s.length <= max ? s : `${s.slice(0, max)}… (${s.length} chars; --json shows it whole)`
}

function stepLines(rec: StepRecord, gate: RunRecord['gate']): string[] {
  const dur =
    rec.startedAt !== undefined && rec.endedAt !== undefined ? `  ${took(rec.endedAt - rec.startedAt)}` : ''
  const tries = rec.attempts > 0 ? `  ${rec.attempts} failed attempt${rec.attempts === 1 ? '' : 's'}` : ''
  const visits = rec.visits > 1 ? `  visit ${rec.visits}` : ''
  // A step entered but parked at its gate has not run: say what it waits for.
  const status =
    gate?.step === rec.number && rec.status === 'running' ? `waiting for approval (${gate.kind})` : rec.status
  const out = [`  step ${rec.number}  ${status}${dur}${tries}${visits}`]
  if (rec.reason !== undefined) out.push(`      skipped: ${rec.reason}`)
  if (rec.input !== undefined) out.push(`      input:  ${shown(rec.input)}`)
  if (rec.output !== undefined) out.push(`      output: ${shown(rec.output)}`)
  if (rec.error !== undefined) out.push(`      error:  ${rec.error}`)
  return out
}

/** `svc sop status`: the trigger, each step's input/output/result/duration, approvals, the state. */
export function statusText(run: RunRecord, now: number): string {
  const lines = [`run ${run.id}  ${run.sop}  ${run.state}`]
  const end = run.finishedAt
  lines.push(
    `created ${when(run.createdAt)}${end !== undefined ? `  finished ${when(end)}  took ${took(end - run.createdAt)}` : `  (${age(now - run.createdAt)} ago)`}`,
  )
  const t = run.trigger
  const kept = run.createdAt - t.at
  lines.push(
    `trigger ${t.type} from ${t.source} at ${when(t.at)} (${run.admission}${kept >= 1000 ? `, after ${took(kept)} held or deferred` : ''})`,
  )
  // A payload that came as text (MQTT, a webhook) is shown as the JSON it parses to, as step 1 reads it.
  lines.push(`  payload: ${shown(payloadAsInput(t.payload))}`)
  if (run.coalescedCount > 0) lines.push(`  and ${run.coalescedCount} coalesced trigger(s)`)
  if (run.gate) {
    const g = run.gate
    lines.push(
      `waiting before step ${g.step} since ${when(g.since)} (${age(now - g.since)}): ${g.reason}${g.operatorOnly ? ' [operator only]' : ''}`,
    )
    if (g.prompt) lines.push(`  prompt: ${g.prompt}`)
    for (const q of g.questions ?? []) lines.push(`  question for step ${q.step}: ${q.question}`)
    lines.push(`  approve with: svc sop approve ${run.id}`)
  }
  const steps = Object.values(run.steps).sort((a, b) => a.number - b.number)
  lines.push(steps.length === 0 ? 'steps: none run yet' : 'steps:')
  for (const s of steps) lines.push(...stepLines(s, run.gate))
  if (run.approvals.length > 0) {
    lines.push('approvals:')
    for (const a of run.approvals)
      lines.push(`  step ${a.step}  ${a.decision} by ${a.by} at ${when(a.at)}${a.note ? `: ${a.note}` : ''}`)
  }
  const decided = Object.entries(run.decisions)
  if (decided.length > 0) {
    lines.push('decisions:')
    for (const [k, v] of decided) lines.push(`  step ${k}: ${v ? 'yes' : 'no'} (${run.decidedBy[k] ?? '?'})`)
  }
  if (run.error !== undefined) lines.push(`error: ${run.error}`)
  if (run.state === 'completed') lines.push(`output: ${shown(run.lastOutput)}`)
  return lines.join('\n')
}

/** `svc sop held`: the kept triggers per SOP. */
export function heldText(sops: SopBacklog[]): string {
  if (sops.length === 0) return 'no held or deferred triggers'
  return table([
    ['SOP', 'WAITING', 'HELD', 'DEFERRED', 'OLDEST', 'NEWEST', 'WHY'],
    ...sops.map((b) => [
      b.sop,
      String(b.count),
      String(b.held),
      String(b.deferred),
      `${age(b.oldestAgeMs)} ago`,
      `${age(b.newestAgeMs)} ago`,
      b.reason,
    ]),
  ])
}
