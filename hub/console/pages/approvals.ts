// GET /approvals: every run parked at a gate, oldest first, with what the owner needs to decide
// (SOP, step, prompt, questions, trigger payload, how long it has waited); POST
// /approvals/:run approves or denies it with a comment, as `svc sop approve|deny` would, by
// "owner (console)". Laid out for a 390-px phone first: one card per run, full-width buttons.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { statusOf } from '../../../errors/codes.ts'
import type { Gate, RunRecord } from '../../../sops/run/record.ts'
import { type Html, html } from '../../../web/html.ts'
import { type ConsoleContext, csrfField } from '../context.ts'
import { age, jsonText, when } from '../format.ts'

export const APPROVER = 'owner (console)'
const NOTE_MAX = 1000
const RUN_ID = /^[A-Za-z0-9_.:-]{1,200}$/

function stepTitle(ctx: ConsoleContext, run: RunRecord, step: number): string {
  const sop = ctx.sops().find((s) => s.name === run.sop)
  return sop?.steps.find((s) => s.number === step)?.title ?? `step ${step}`
}

function questions(gate: Gate): Html {
  if (!gate.questions?.length) return html``
  return html`<fieldset class="questions"><legend>Answer before approving</legend>${gate.questions.map(
    (q) =>
      html`<p>${q.question}</p><div class="row"><label class="inline"><input type="radio" name="q_${q.step}" value="yes" required> yes</label> <label class="inline"><input type="radio" name="q_${q.step}" value="no"> no</label></div>`,
  )}</fieldset>`
}

function card(ctx: ConsoleContext, req: FastifyRequest, run: RunRecord, now: number): Html {
  const gate = run.gate
  if (!gate) return html``
  const title = stepTitle(ctx, run, gate.step)
  return html`<article class="approval" id="run-${run.id}" data-run="${run.id}">
<h2><a href="/sops/${encodeURIComponent(run.sop)}">${run.sop}</a></h2>
<p class="muted">step ${gate.step}: ${title} · ${gate.kind}${gate.reason ? ` (${gate.reason})` : ''} · waiting ${age(now - run.updatedAt)}</p>
${gate.prompt ? html`<p class="prompt"><strong>${gate.prompt}</strong></p>` : ''}
<details open><summary>Trigger payload (${run.trigger.type}, ${run.trigger.source}, ${when(run.trigger.at, now)})</summary><pre>${jsonText(run.trigger.payload, 2000)}</pre></details>
${
  gate.requests?.length
    ? html`<p class="muted">Asked for by ${gate.requests.map((r) => html`${r.by}${r.note ? `: ${r.note}` : ''} `)}</p>`
    : ''
}
<form method="post" action="/approvals/${encodeURIComponent(run.id)}">
${csrfField(req)}
${questions(gate)}
<label>Comment (optional) <textarea name="note" maxlength="${NOTE_MAX}" rows="2"></textarea></label>
<div class="actions"><button type="submit" name="decision" value="approve">Approve</button><button type="submit" name="decision" value="deny" class="deny" formnovalidate>Deny</button></div>
</form>
<p class="muted"><a href="/runs/${encodeURIComponent(run.id)}">Run ${run.id}</a></p>
</article>`
}

async function listPage(
  ctx: ConsoleContext,
  req: FastifyRequest,
  reply: FastifyReply,
  flash: Html | null,
  status = 200,
): Promise<FastifyReply> {
  const now = Date.now()
  const runs = (await Promise.all(ctx.engine.pending().map((p) => ctx.engine.getRun(p.id)))).filter(
    (r): r is RunRecord => r !== undefined && r.gate !== undefined,
  )
  const body = html`<h1>Approvals</h1>
${flash ?? ''}
<div id="approvals" data-live="run">
${
  runs.length === 0
    ? html`<p class="muted" data-empty>Nothing waits for approval.</p>`
    : html`<p class="muted">${runs.length} ${runs.length === 1 ? 'run waits' : 'runs wait'}, oldest first.</p>${runs.map((r) => card(ctx, req, r, now))}`
}
</div>`
  return ctx.render(req, reply, { title: 'Approvals', nav: 'approvals', body, status })
}

const str = (body: unknown, k: string): string | undefined => {
  const v = typeof body === 'object' && body !== null ? (body as Record<string, unknown>)[k] : undefined
  return typeof v === 'string' ? v : undefined
}

export function register(app: FastifyInstance, ctx: ConsoleContext): void {
  app.get<{ Querystring: { done?: string; run?: string } }>('/approvals', async (req, reply) => {
    const { done, run } = req.query
    const flash =
      (done === 'approved' || done === 'denied') && typeof run === 'string' && RUN_ID.test(run)
        ? html`<p class="ok" role="status">Run <a href="/runs/${encodeURIComponent(run)}">${run}</a> ${done}.</p>`
        : null
    return listPage(ctx, req, reply, flash)
  })

  app.post<{ Params: { run: string } }>('/approvals/:run', async (req, reply) => {
    const id = req.params.run
    const refuse = (status: number, text: string) =>
      listPage(ctx, req, reply, html`<p class="error" role="alert">${text} Nothing was changed.</p>`, status)
    if (!RUN_ID.test(id)) return refuse(400, 'That is not a run id.')
    const decision = str(req.body, 'decision')
    if (decision !== 'approve' && decision !== 'deny')
      return refuse(400, 'decision: must be "approve" or "deny".')
    const noteText = (str(req.body, 'note') ?? '').trim()
    if (noteText.length > NOTE_MAX)
      return refuse(400, `note: at most ${NOTE_MAX} characters (got ${noteText.length}).`)
    const note = noteText === '' ? {} : { note: noteText }
    let result: Awaited<ReturnType<typeof ctx.engine.approve>>
    if (decision === 'deny') result = await ctx.engine.deny(id, { by: APPROVER, ...note })
    else {
      const decisions: Record<number, boolean> = {}
      for (const [k, v] of Object.entries((req.body ?? {}) as Record<string, unknown>)) {
        const m = /^q_(\d{1,4})$/.exec(k)
        if (!m) continue
        if (v !== 'yes' && v !== 'no') return refuse(400, `${k}: answer "yes" or "no".`)
        decisions[Number(m[1])] = v === 'yes'
      }
      result = await ctx.engine.approve(id, { by: APPROVER, ...note, decisions, via: 'operator' })
    }
    if (!result.ok) {
      return refuse(statusOf(result.code), `${result.error}.`)
    }
    return reply.redirect(
      `/approvals?done=${decision === 'approve' ? 'approved' : 'denied'}&run=${encodeURIComponent(id)}`,
      303,
    )
  })
}
