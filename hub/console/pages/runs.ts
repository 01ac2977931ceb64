// GET /runs: run history, newest first, filtered by SOP, state and time, a page at a time from the
// engine's run index (queryRuns, keyset: "Older" carries the cursor, never an offset).
// GET /runs/:id: one run whole: trigger payload, every step's input, output, result and time,
// approvals, logs. Bad filters and unknown runs get a page saying what was wrong.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { parseTimeArg } from '../../api/time-arg.ts'
import { failAt, fail, type Result } from '../../../errors/codes.ts'
import { type RunFilter, RunFilterError, type RunSummary } from '../../../sops/hub-engine.ts'
import type { LogEntry, RunRecord, StepRecord } from '../../../sops/run/record.ts'
import { RUN_STATES, type RunState } from '../../../sops/run/states.ts'
import { type Html, html } from '../../../web/html.ts'
import type { ConsoleContext } from '../context.ts'
import { age, duration, jsonText, startOfDay, stateTag, when } from '../format.ts'
import { bytesText } from '../../disk/reserve.ts'
import { daysText, historyView, NO_OLDEST } from '../../history/view.ts'

export const PAGE_SIZE = 50
const RUN_ID = /^[A-Za-z0-9_.:-]{1,200}$/

interface RunsQuery {
  sop?: string
  state?: string
  since?: string
  until?: string
  cursor?: string
}

/** The query as a RunFilter, or the first field that is wrong. `today` is midnight, hub time. */
export function runFilter(q: RunsQuery, now: number): Result<{ filter: RunFilter }> {
  const filter: RunFilter = { limit: PAGE_SIZE }
  const text = (v: unknown): string | undefined =>
    typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined
  const sop = text(q.sop)
  if (sop !== undefined) {
    if (sop.length > 128) return fail('BAD_INPUT', 'SOP: a SOP name is at most 128 characters')
    filter.sop = sop
  }
  const state = text(q.state)
  if (state !== undefined) {
    if (!(RUN_STATES as readonly string[]).includes(state))
      return fail('BAD_INPUT', `state: "${state.slice(0, 40)}" is not one of ${RUN_STATES.join(', ')}`)
    filter.state = state as RunState
  }
  for (const k of ['since', 'until'] as const) {
    const v = text(q[k])
    if (v === undefined) continue
    if (v === 'today') {
      filter[k] = startOfDay(now)
      continue
    }
    const t = parseTimeArg(v, now)
    if (!t.ok) return failAt(`${k === 'since' ? 'from' : 'until'}: `, t)
    filter[k] = t.ms
  }
  const cursor = text(q.cursor)
  if (cursor !== undefined) filter.cursor = cursor
  return { ok: true, filter }
}

function qs(q: RunsQuery, extra: Record<string, string>): string {
  const p = new URLSearchParams()
  for (const k of ['sop', 'state', 'since', 'until'] as const) {
    const v = q[k]
    if (typeof v === 'string' && v.trim() !== '') p.set(k, v.trim())
  }
  for (const [k, v] of Object.entries(extra)) p.set(k, v)
  const s = p.toString()
  return s ? `?${s}` : ''
}

function filters(ctx: ConsoleContext, q: RunsQuery): Html {
  const sops = ctx.sops().map((s) => s.name)
  const cur = typeof q.sop === 'string' ? q.sop : ''
  if (cur !== '' && !sops.includes(cur)) sops.push(cur)
  const val = (v: unknown) => (typeof v === 'string' ? v : '')
  return html`<form method="get" action="/runs" class="filters row" role="search">
<label>SOP <select name="sop"><option value="">any</option>${sops.map((s) => html`<option${s === cur ? html` selected` : ''}>${s}</option>`)}</select></label>
<label>State <select name="state"><option value="">any</option>${RUN_STATES.map((s) => html`<option${s === q.state ? html` selected` : ''}>${s}</option>`)}</select></label>
<label>From <input name="since" value="${val(q.since)}" placeholder="today, 2h, 2026-11-25" size="14"></label>
<label>Until <input name="until" value="${val(q.until)}" placeholder="2026-11-25T18:00" size="14"></label>
<button type="submit">Show</button> <a href="/runs">Clear</a>
</form>`
}

function runRow(r: RunSummary, now: number): Html {
  return html`<tr data-run="${r.id}">
<td class="nowrap"><a href="/runs/${encodeURIComponent(r.id)}"><code>${r.id.slice(0, 8)}</code></a></td>
<td>${r.sop}</td>
<td>${stateTag(r.state)}</td>
<td class="hide-narrow">${r.current ?? ''}</td>
<td>${when(r.createdAt, now)}</td>
<td class="hide-narrow">${r.finishedAt !== undefined ? duration(r.finishedAt - r.createdAt) : ''}</td>
</tr>`
}

/**
 * How far back the history reaches and its size against hub.toml `[history]` (hub/history/view.ts);
 * nothing on an engine without a history log.
 */
function reachLine(ctx: ConsoleContext, now: number): Html {
  const h = ctx.engine.history?.()
  if (!h) return html``
  const v = historyView(h)
  return html`<p class="muted" id="runs-history">History kept ${
    h.oldestAt === null ? `(${NO_OLDEST})` : html`from ${when(h.oldestAt, now)}`
  }: ${bytesText(v.log_bytes)} in ${v.segments} segment${v.segments === 1 ? '' : 's'}; finished runs are dropped after ${daysText(v.max_age_days, age)} or past ${bytesText(h.maxBytes)}, whichever comes first.</p>`
}

async function listRuns(
  ctx: ConsoleContext,
  req: FastifyRequest<{ Querystring: RunsQuery }>,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const now = Date.now()
  const q = req.query
  const f = runFilter(q, now)
  const bad = (text: string) =>
    ctx.render(req, reply, {
      title: 'Runs',
      nav: 'runs',
      status: 400,
      body: html`<h1>Runs</h1>${filters(ctx, q)}<p class="error" role="alert">${text}</p>`,
    })
  if (!f.ok) return bad(f.error)
  let page: Awaited<ReturnType<typeof ctx.engine.queryRuns>>
  try {
    page = await ctx.engine.queryRuns(f.filter)
  } catch (err) {
    if (err instanceof RunFilterError) return bad(err.message)
    throw err
  }
  const first = f.filter.cursor === undefined
  const body = html`<h1>Runs</h1>
${filters(ctx, q)}
${reachLine(ctx, now)}
<div id="runs-list"${first ? html` data-live="run"` : ''}>
${
  page.runs.length === 0
    ? html`<p class="muted">No runs${first ? '' : ' older than these'} match.</p>`
    : html`<div class="table-wrap"><table class="runs"><thead><tr><th>Run</th><th>SOP</th><th>State</th><th class="hide-narrow">Step</th><th>Started</th><th class="hide-narrow">Took</th></tr></thead>
<tbody>${page.runs.map((r) => runRow(r, now))}</tbody></table></div>`
}
</div>
<nav class="pager" aria-label="Pages">${first ? '' : html`<a href="/runs${qs(q, {})}">Newest</a>`}${page.next ? html`<a href="/runs${qs(q, { cursor: page.next })}" rel="next">Older runs</a>` : ''}</nav>`
  return ctx.render(req, reply, { title: 'Runs', nav: 'runs', body })
}

/**
 * How long each step took: the engine's own times of its latest attempt (`startedAt`/`endedAt`);
 * for a record written before the engine kept them, the span from the log entry before the step's
 * completing entry to that entry (a close bound: the engine logged no "started" line then).
 */
export function stepTimes(
  steps: RunRecord['steps'],
  log: readonly LogEntry[],
): Map<number, { ms: number; exact: boolean }> {
  const out = new Map<number, { ms: number; exact: boolean }>()
  let prev: number | null = null
  for (const e of log) {
    if (e.step > 0 && prev !== null && /^(completed|attempt \d+ failed)/.test(e.msg))
      out.set(e.step, { ms: (out.get(e.step)?.ms ?? 0) + (e.at - prev), exact: false })
    prev = e.at
  }
  for (const s of Object.values(steps))
    if (s.startedAt !== undefined && s.endedAt !== undefined)
      out.set(s.number, { ms: s.endedAt - s.startedAt, exact: true })
  return out
}

function stepBlock(
  n: number,
  title: string,
  s: StepRecord | undefined,
  took: { ms: number; exact: boolean } | undefined,
  gated: boolean,
): Html {
  // A step parked at its gate is stored as `running`; say what it is doing.
  const status = gated ? 'waits for approval' : (s?.status ?? 'not run')
  const key = gated ? 'waiting_approval' : status.replace(' ', '_')
  return html`<section class="step s-${key}" data-step="${n}">
<h3>${n}. ${title} <span class="tag s-${key}">${status}</span></h3>
${took !== undefined ? html`<p class="took">took ${took.exact ? '' : '≈ '}${duration(took.ms)}</p>` : ''}
${s?.reason ? html`<p class="muted">${s.reason}</p>` : ''}
${s?.error ? html`<p class="error">${s.error}</p>` : ''}
${s && s.input !== undefined ? html`<details><summary>Input</summary><pre>${jsonText(s.input)}</pre></details>` : ''}
${s && s.output !== undefined ? html`<details open><summary>Output</summary><pre data-output>${jsonText(s.output)}</pre></details>` : ''}
${s && s.calls.length > 0 ? html`<details><summary>Tool results (${s.calls.length})</summary><pre>${jsonText(s.calls)}</pre></details>` : ''}
${s && (s.visits > 1 || s.attempts > 0) ? html`<p class="muted">${s.visits} visits${s.attempts ? `, ${s.attempts} failed attempts` : ''}</p>` : ''}
</section>`
}

function runBody(ctx: ConsoleContext, run: RunRecord, log: readonly LogEntry[], now: number): Html {
  const sop = ctx.sops().find((s) => s.name === run.sop)
  const numbers = new Set<number>([
    ...(sop?.steps.map((s) => s.number) ?? []),
    ...Object.keys(run.steps).map(Number),
  ])
  const title = (n: number) => sop?.steps.find((s) => s.number === n)?.title ?? `step ${n}`
  const took = stepTimes(run.steps, log)
  return html`<h1>Run <code>${run.id}</code></h1>
<div id="run-facts" data-live="run">
<dl class="facts">
<dt>SOP</dt><dd><a href="/runs?sop=${encodeURIComponent(run.sop)}">${run.sop}</a></dd>
<dt>State</dt><dd>${stateTag(run.state)}${run.error ? html` <span class="error">${run.error}</span>` : ''}</dd>
<dt>Started</dt><dd>${when(run.createdAt, now)}</dd>
${run.finishedAt !== undefined ? html`<dt>Finished</dt><dd>${when(run.finishedAt, now)} (took ${duration(run.finishedAt - run.createdAt)})</dd>` : ''}
<dt>Mode</dt><dd>${run.mode}</dd>
${run.coalescedCount > 0 ? html`<dt>Coalesced</dt><dd>${run.coalescedCount} later triggers folded in</dd>` : ''}
</dl>
${
  run.gate
    ? html`<p class="prompt">Waits at step ${run.gate.step} (${run.gate.kind}${run.gate.prompt ? `: ${run.gate.prompt}` : ''}). <a href="/approvals#run-${run.id}">Approve or deny</a></p>`
    : ''
}
<h2>Trigger</h2>
<p>${run.trigger.type} from <code>${run.trigger.source}</code>, ${when(run.trigger.at, now)}</p>
<pre data-payload>${jsonText(run.trigger.payload)}</pre>
<h2>Steps</h2>
${[...numbers].sort((a, b) => a - b).map((n) => stepBlock(n, title(n), run.steps[String(n)], took.get(n), run.gate?.step === n))}
<h2>Approvals</h2>
${
  run.approvals.length === 0
    ? html`<p class="muted">None.</p>`
    : html`<ul class="approvals">${run.approvals.map(
        (a) =>
          html`<li><strong>${a.decision}</strong> at step ${a.step} (${a.kind}) by ${a.by}, ${when(a.at, now)}${a.note ? html`: “${a.note}”` : ''}</li>`,
      )}</ul>`
}
<h2>Log</h2>
${
  log.length === 0
    ? html`<p class="muted">No log entries.</p>`
    : html`<ol class="log">${log.map(
        (e) =>
          html`<li class="l-${e.level}"><time datetime="${new Date(e.at).toISOString()}" class="muted">${new Date(e.at).toISOString().slice(11, 23)}</time> ${e.step ? html`<span class="muted">step ${e.step}</span> ` : ''}${e.level !== 'info' ? html`<strong>${e.level}</strong> ` : ''}${e.msg}</li>`,
      )}</ol>`
}
</div>`
}

export function register(app: FastifyInstance, ctx: ConsoleContext): void {
  app.get<{ Querystring: RunsQuery }>('/runs', (req, reply) => listRuns(ctx, req, reply))

  app.get<{ Params: { id: string } }>('/runs/:id', async (req, reply) => {
    const id = req.params.id
    const notFound = () =>
      ctx.render(req, reply, {
        title: 'Run not found',
        nav: 'runs',
        status: 404,
        body: html`<h1>Run not found</h1><p>No run with id <code>${id.slice(0, 200)}</code> on this hub.</p><p><a href="/runs">All runs</a></p>`,
      })
    if (!RUN_ID.test(id)) return notFound()
    const run = await ctx.engine.getRun(id)
    if (!run) return notFound()
    const log = (await ctx.engine.logs(id)) ?? run.log
    return ctx.render(req, reply, {
      title: `Run ${id.slice(0, 8)}`,
      nav: 'runs',
      body: runBody(ctx, run, log, Date.now()),
    })
  })
}
