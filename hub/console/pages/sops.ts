// GET /sops: every SOP the hub runs, with its validation state, triggers and last run, the SOP
// folders that did not load (file:line: message), and the held backlog. GET /sops/:name: one
// SOP, its step graph (the data of `svc sop graph`, drawn), last runs, and a form that starts a
// real run by hand (POST /sops/:name/trigger, a `manual` trigger, as `svc sop trigger`).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { AdmissionOutcome } from '../../../sops/engine-api.ts'
import { graphText } from '../../../sops/graph.ts'
import type { RunSummary } from '../../../sops/hub-engine.ts'
import { formatDiagnostic } from '../../../sops/parse.ts'
import { triggerText } from '../../../sops/trigger-text.ts'
import type { Diagnostic, Sop } from '../../../sops/types.ts'
import { fail, statusOf } from '../../../errors/codes.ts'
import { type Html, html } from '../../../web/html.ts'
import { type ConsoleContext, csrfField } from '../context.ts'
import { stateTag, when } from '../format.ts'
import { heldBacklogView } from '../views/held-backlog.ts'
import { parseJsonBox } from '../views/json-where.ts'
import { sopGraphSvg } from '../views/sop-graph-svg.ts'
import { groupDiagnostics, shortPath } from '../views/sops-data.ts'

/** The local API's body limit for a trigger (hub/api/index.ts): a console post gets no more. */
const PAYLOAD_MAX = 64 * 1024
const LAST_RUNS = 10
/** A phone's width less the page's margins: a wider diagram scrolls in its box (said under it). */
const NARROW = 358

const sopHref = (name: string): string => `/sops/${encodeURIComponent(name)}`
const runHref = (id: string): string => `/runs/${encodeURIComponent(id)}`

function diagnosticList(list: readonly Diagnostic[], sopsDir: string): Html {
  return html`<div class="diagnostics">${list.map(
    (d) =>
      html`<p data-severity="${d.severity}"><code class="${d.severity === 'error' ? 'error' : 'muted'}" title="${formatDiagnostic(d)}">${shortPath(d.file, sopsDir)}:${d.line}</code> ${d.severity === 'warning' ? 'warning: ' : ''}${d.message}</p>`,
  )}</div>`
}

function runsTable(runs: readonly RunSummary[], now: number): Html {
  if (runs.length === 0) return html`<p class="muted">No runs yet.</p>`
  return html`<div class="table-wrap"><table class="runs">
<thead><tr><th scope="col">run</th><th scope="col">state</th><th scope="col" class="hide-narrow">step</th><th scope="col">started</th><th scope="col" class="hide-narrow">last change</th></tr></thead>
<tbody>${runs.map(
    (r) =>
      html`<tr data-run="${r.id}"><td><a href="${runHref(r.id)}"><code>${r.id.slice(0, 8)}</code></a></td><td>${stateTag(r.state)}${r.error ? html` <span class="error">${r.error}</span>` : ''}</td><td class="hide-narrow">${r.current ?? '–'}</td><td>${when(r.createdAt, now)}</td><td class="hide-narrow">${when(r.updatedAt, now)}</td></tr>`,
  )}</tbody></table></div>`
}

function sopCard(
  sop: Sop,
  warnings: readonly Diagnostic[],
  last: RunSummary | undefined,
  now: number,
  sopsDir: string,
): Html {
  return html`<li class="card" data-sop="${sop.name}">
<h2><a href="${sopHref(sop.name)}">${sop.name}</a></h2>
<p><span class="tag s-completed">valid</span>${warnings.length ? html` <span class="tag">${warnings.length} warning${warnings.length === 1 ? '' : 's'}</span>` : ''} <span class="tag">${sop.executionMode}</span> <span class="tag">${sop.admissionPolicy}</span></p>
<p>${sop.description}</p>
<p class="muted">${sop.steps.length} step${sop.steps.length === 1 ? '' : 's'} · triggers: ${sop.triggers.length ? sop.triggers.map((t) => triggerText(t)).join('; ') : 'none (start it by hand)'}</p>
<p>last run: ${last ? html`<a href="${runHref(last.id)}">${stateTag(last.state)}</a> ${when(last.createdAt, now)}` : html`<span class="muted">none yet</span>`}</p>
${warnings.length ? diagnosticList(warnings, sopsDir) : ''}
</li>`
}

async function listPage(ctx: ConsoleContext, now: number): Promise<Html> {
  const sops = [...ctx.sops()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  const groups = groupDiagnostics(sops, ctx.diagnostics())
  const last = await Promise.all(
    sops.map(async (s) => (await ctx.engine.queryRuns({ sop: s.name, limit: 1 })).runs[0]),
  )
  const broken = groups.notLoaded
  return html`<h1>SOPs</h1>
<p class="muted">${sops.length} loaded from <code>${ctx.sopsDir}</code>${broken.length ? html`, <a href="#not-loaded">${broken.length} not loaded</a>` : ''}.</p>
<section id="sops-held" data-live="kept" aria-labelledby="held-h">
<h2 id="held-h">Held and deferred triggers</h2>
${heldBacklogView(ctx.engine.keptTriggers(), now, { links: true })}
</section>
${
  broken.length
    ? html`<section id="not-loaded" aria-labelledby="not-loaded-h">
<h2 id="not-loaded-h">Not loaded</h2>
<p>These SOP folders have errors, so the hub does not run them. Fix them and reload the hub (SIGHUP).</p>
<ul class="cards">${broken.map(
        (b) =>
          html`<li class="card" data-not-loaded="${b.dir}"><h3><code>${shortPath(b.dir, ctx.sopsDir)}</code></h3><p><span class="tag s-failed">invalid</span></p>${diagnosticList(b.diagnostics, ctx.sopsDir)}</li>`,
      )}</ul>
</section>`
    : ''
}
<section id="sops-list" data-live="run" aria-labelledby="loaded-h">
<h2 id="loaded-h">Loaded</h2>
${
  sops.length
    ? html`<ul class="cards">${sops.map((s, i) => sopCard(s, groups.bySop.get(s.name) ?? [], last[i], now, ctx.sopsDir))}</ul>`
    : html`<p class="muted">No SOP is loaded. Put a SOP folder (SOP.toml and SOP.md) in <code>${ctx.sopsDir}</code> and reload the hub.</p>`
}
</section>`
}

const OUTCOME_TEXT: Record<AdmissionOutcome, string> = {
  started: 'started',
  coalesced: 'folded into a run already in flight (admission: coalesce)',
  held: 'held: a run of this SOP is active or parked, and this one starts when none is (admission: hold)',
  deferred: 'deferred: no slot is free, and it starts when one frees (admission: parallel)',
  dropped: 'dropped: no slot is free (admission: drop)',
  cooldown: 'dropped: inside the cooldown after the last run',
}

interface Notice {
  outcome: AdmissionOutcome
  run?: RunSummary | { id: string }
}

interface FormState {
  payload: string
  error: string | null
}

async function detailPage(
  ctx: ConsoleContext,
  req: FastifyRequest,
  sop: Sop,
  now: number,
  notice: Notice | null,
  form: FormState,
): Promise<Html> {
  const warnings = groupDiagnostics([sop], ctx.diagnostics()).bySop.get(sop.name) ?? []
  const runs = (await ctx.engine.queryRuns({ sop: sop.name, limit: LAST_RUNS })).runs
  const graph = sopGraphSvg(sop)
  const kept = ctx.engine.keptTriggers().filter((k) => k.sop === sop.name)
  const hasManual = sop.triggers.some((t) => t.type === 'manual')
  return html`<p><a href="/sops">← SOPs</a></p>
<h1>${sop.name}</h1>
<p>${sop.description}</p>
<dl class="facts">
<dt>validation</dt><dd>${warnings.length ? html`valid, ${warnings.length} warning${warnings.length === 1 ? '' : 's'}${diagnosticList(warnings, ctx.sopsDir)}` : html`<span class="ok">valid</span>`}</dd>
<dt>mode</dt><dd>${sop.executionMode}</dd>
<dt>admission</dt><dd>${sop.admissionPolicy}, at most ${sop.maxConcurrent} at once${sop.cooldownSecs ? `, cooldown ${sop.cooldownSecs} s` : ''}</dd>
<dt>priority</dt><dd>${sop.priority}</dd>
${sop.version ? html`<dt>version</dt><dd>${sop.version}</dd>` : ''}
<dt>agent</dt><dd>${sop.agent ?? html`<span class="muted">none</span>`}</dd>
<dt>folder</dt><dd><code>${shortPath(sop.dir, ctx.sopsDir)}</code></dd>
</dl>
<h2>Triggers</h2>
${
  sop.triggers.length
    ? html`<ul class="triggers">${sop.triggers.map((t) => html`<li><code>${triggerText(t)}</code></li>`)}</ul>`
    : html`<p class="muted">None: it runs when started by hand or by a tool.</p>`
}
<h2 id="graph-h">Steps</h2>
<div class="table-wrap graph" role="region" aria-labelledby="graph-h" tabindex="0" data-graph-width="${graph.width}">${graph.svg}</div>
${graph.width > NARROW ? html`<p class="muted">The diagram is ${graph.width} px wide: on a narrow screen, scroll it sideways.</p>` : ''}
<p class="muted">Arrows are routes after a step completes (a lane for each jump); red dashed ones are failure routes: <em>on failure</em> goes to a step, <em>retry ×N</em> runs the step again, and ✕ means the run fails. A heavy border marks a terminal step. Hover a box or arrow for its full text.</p>
<details><summary>The graph as text (svc sop graph)</summary><pre>${graphText(sop)}</pre></details>
<h2 id="run-h">Run by hand</h2>
${
  notice
    ? html`<p class="${notice.outcome === 'started' || notice.outcome === 'coalesced' ? 'ok' : 'muted'}" role="status" id="trigger-outcome" data-outcome="${notice.outcome}">Triggered by hand: ${notice.run ? html`run <a href="${runHref(notice.run.id)}"><code>${notice.run.id}</code></a> ` : ''}${OUTCOME_TEXT[notice.outcome]}.</p>`
    : ''
}
<form method="post" action="${sopHref(sop.name)}/trigger#run-h" class="stack" aria-labelledby="run-h">
${csrfField(req)}
${form.error ? html`<p class="error" role="alert" id="payload-error">${form.error}</p>` : ''}
<label>Trigger payload (JSON)
<textarea name="payload" rows="4" spellcheck="false" autocomplete="off"${form.error ? html` aria-invalid="true" aria-describedby="payload-error"` : ''}>${form.payload}</textarea></label>
<p class="muted">Starts a real run now, as a <code>manual</code> trigger${hasManual ? '' : html` (this SOP lists no <code>manual</code> trigger; the console may start it all the same, like <code>sop_execute</code>)`}. Admission applies: it may be held, deferred or dropped.</p>
<div class="row"><button type="submit">Trigger ${sop.name}</button></div>
</form>
<section id="sop-held" data-live="kept" aria-labelledby="sop-held-h">
<h2 id="sop-held-h">Held and deferred triggers</h2>
${heldBacklogView(kept, now, { links: false })}
</section>
<section id="sop-runs" data-live="run" aria-labelledby="sop-runs-h">
<h2 id="sop-runs-h">Last runs</h2>
${runsTable(runs, now)}
${runs.length === LAST_RUNS ? html`<p><a href="/runs?sop=${encodeURIComponent(sop.name)}">All runs of ${sop.name}</a></p>` : ''}
</section>`
}

export function register(app: FastifyInstance, ctx: ConsoleContext): void {
  const find = (name: string): Sop | undefined => ctx.sops().find((s) => s.name === name)
  const notFound = (req: FastifyRequest, reply: FastifyReply, name: string): FastifyReply =>
    ctx.render(req, reply, {
      title: 'No such SOP',
      nav: 'sops',
      status: 404,
      body: html`<h1>No such SOP</h1><p class="error" role="alert">no SOP named "${name}" is loaded on this hub; nothing was triggered.</p><p><a href="/sops">All SOPs</a></p>`,
    })

  app.get('/sops', async (req, reply) =>
    ctx.render(req, reply, { title: 'SOPs', nav: 'sops', body: await listPage(ctx, Date.now()) }),
  )

  app.get<{ Params: { name: string }; Querystring: { outcome?: string; run?: string } }>(
    '/sops/:name',
    async (req, reply) => {
      const sop = find(req.params.name)
      if (!sop) return notFound(req, reply, req.params.name)
      // After a trigger (post, redirect, get): the outcome is one of the engine's words, and the
      // run is shown only if it exists and is this SOP's, so a crafted link cannot claim a run.
      let notice: Notice | null = null
      const outcome = req.query.outcome
      if (outcome !== undefined && Object.hasOwn(OUTCOME_TEXT, outcome)) {
        const o = outcome as AdmissionOutcome
        const run = typeof req.query.run === 'string' ? await ctx.engine.getRun(req.query.run) : undefined
        notice = { outcome: o, ...(run && run.sop === sop.name ? { run: { id: run.id } } : {}) }
        if ((o === 'started' || o === 'coalesced') && !notice.run) notice = null
      }
      const body = await detailPage(ctx, req, sop, Date.now(), notice, { payload: '{}', error: null })
      return ctx.render(req, reply, { title: sop.name, nav: 'sops', body })
    },
  )

  app.post<{ Params: { name: string } }>('/sops/:name/trigger', async (req, reply) => {
    const sop = find(req.params.name)
    if (!sop) return notFound(req, reply, req.params.name)
    const raw = (req.body as Record<string, unknown> | null)?.payload
    const text = typeof raw === 'string' ? raw : ''
    // The form sends text; a JSON post with a payload object is not silently triggered with {}.
    const parsed =
      raw === undefined || typeof raw === 'string'
        ? parseJsonBox(text, 'payload', PAYLOAD_MAX)
        : fail('BAD_INPUT', 'payload: expected the text of the payload box (a JSON document as a string)')
    if (!parsed.ok) {
      const error = `${parsed.error}; nothing was triggered`
      const body = await detailPage(ctx, req, sop, Date.now(), null, { payload: text, error })
      return ctx.render(req, reply, { title: sop.name, nav: 'sops', body, status: statusOf(parsed.code) })
    }
    const d = await ctx.engine.trigger(sop.name, {
      type: 'manual',
      source: 'console',
      payload: parsed.value,
      at: Date.now(),
    })
    ctx.log.info({ sop: sop.name, outcome: d.outcome, run: d.runId }, 'console: triggered by hand')
    const q = new URLSearchParams({ outcome: d.outcome, ...(d.runId ? { run: d.runId } : {}) })
    return reply.redirect(`${sopHref(sop.name)}?${q}#run-h`, 303)
  })
}
