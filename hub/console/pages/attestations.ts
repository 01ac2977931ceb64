// GET /attestations: the attested lines by state (stored, sending, requested, attested, failed
// with its reason) with the figures of `svc attest status --json` (hub/attest/api.ts
// attestStatus), what sync is doing (hub/attest/sync-status.ts: its sentence, progress, rate
// limit, stuck nonce, last error), the lines waiting and the failed ones, and "sync now"
// (POST /attestations/sync: one drain of the queue, started at once, its outcome shown here).
// Lines are numbered from 1 as `svc attest export` and `verify-line --line N` number them.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { errorText } from '../../../errors/text.ts'
import { type Html, html } from '../../../web/html.ts'
import { type AttestStatus, attestStatus } from '../../attest/api.ts'
import type { AttestRecord } from '../../attest/record.ts'
import type { SyncReport } from '../../attest/sync.ts'
import { etaText } from '../../attest/sync-status.ts'
import type { ConsoleAttestation, ConsoleContext } from '../context.ts'
import { csrfField } from '../context.ts'
import { age, when } from '../format.ts'

const WAITING_SHOWN = 20
const FAILED_SHOWN = 50
const NEWEST_SHOWN = 10
/** How often the page's figures are compared, to tell open pages (topic `attest`) when they move. */
const WATCH_MS = 1000

/** The outcome of the last "sync now" pressed on this console. */
type SyncNow =
  | { state: 'running'; at: number }
  | { state: 'done'; at: number; report: SyncReport }
  | { state: 'failed'; at: number; error: string }

const STATES: [keyof AttestStatus, string, string][] = [
  ['pending', 'stored', 'signed and stored, not sent yet'],
  ['sending', 'sending', 'request transaction signed and out'],
  ['requested', 'requested', 'request mined, the attestor has not answered'],
  ['attested', 'attested', 'verifiable on chain'],
  ['failed', 'failed', 'cannot be attested; kept, never retried'],
]

const ms = (iso: string | null): number | null => (iso === null ? null : Date.parse(iso))

function linesTable(rows: readonly AttestRecord[], reason: boolean, now: number): Html {
  return html`<div class="table-wrap"><table class="lines">
<thead><tr><th scope="col">line</th><th scope="col">action</th><th scope="col">state</th>${reason ? html`<th scope="col">reason</th>` : html`<th scope="col" class="hide-narrow">request</th>`}<th scope="col" class="hide-narrow">stored</th></tr></thead>
<tbody>${rows.map(
    (r) =>
      html`<tr data-line="${r.seq + 1}" data-state="${r.state}"><td>${r.seq + 1}</td><td><code>${r.action}</code></td><td><span class="tag s-${r.state === 'attested' ? 'completed' : r.state}">${r.state === 'pending' ? 'stored' : r.state}</span></td>${reason ? html`<td class="error">${r.error ?? 'no reason recorded'}</td>` : html`<td class="hide-narrow">${r.requestTx ? html`<code title="${r.requestTx.hash}">${r.requestTx.hash.slice(0, 10)}…</code> nonce ${r.requestTx.nonce}` : html`<span class="muted">–</span>`}</td>`}<td class="hide-narrow">${when(Date.parse(r.createdAt), now)}</td></tr>`,
  )}</tbody></table></div>`
}

function syncSection(
  a: ConsoleAttestation,
  st: AttestStatus,
  req: FastifyRequest,
  last: SyncNow | null,
  now: number,
): Html {
  const s = st.sync
  const waiting = st.pending + st.sending + st.requested
  const lastNow =
    last === null
      ? ''
      : last.state === 'running'
        ? html`<p class="muted" data-sync-now="running">Sync now: started ${when(last.at, now)}, running…</p>`
        : last.state === 'done'
          ? html`<p class="ok" data-sync-now="done">Sync now ${when(last.at, now)}: ${last.report.requested} requested, ${last.report.attested} attested, ${last.report.failed} failed, ${last.report.remaining} left.</p>`
          : html`<p class="error" data-sync-now="failed">Sync now ${when(last.at, now)} failed: ${last.error}</p>`
  if (!s || !a.syncNow)
    return html`<p data-sync-state="off">No <code>[chain]</code> sync settings on this hub: lines are stored and wait for <code>svc attest sync</code> (hub/README.md, Sync).</p>`
  const since = ms(s.since)
  const lastRun = ms(s.lastRunAt)
  const p = s.progress
  return html`<p class="figure-line"><span class="tag s-${s.state === 'idle' ? 'completed' : s.state === 'syncing' ? 'running' : 'failed'}" data-sync-state="${s.state}">${s.state}</span> ${s.line}</p>
${
  p
    ? html`<p><progress max="${p.total}" value="${p.done}" aria-label="lines sent in this sync run">${p.done} of ${p.total}</progress> ${p.done}/${p.total} lines, ${p.linesPerSec} lines/s, ETA ${etaText(p.etaSec)}</p>`
    : ''
}
<dl class="facts">
<dt>waiting</dt><dd data-waiting="${waiting}">${waiting} line${waiting === 1 ? '' : 's'}</dd>
${since !== null ? html`<dt>in this state</dt><dd>${age(now - since)}</dd>` : ''}
<dt>last sync run</dt><dd>${lastRun !== null ? when(lastRun, now) : html`<span class="muted">none yet</span>`}</dd>
<dt>last error</dt><dd>${s.lastError ? html`<span class="error">${s.lastError}</span>` : html`<span class="muted">none</span>`}</dd>
${s.rateLimitedUntil ? html`<dt>rate-limited until</dt><dd>${s.rateLimitedUntil}</dd>` : ''}
${s.stuck ? html`<dt>stuck</dt><dd class="error">nonce ${s.stuck.nonce}, replaced ${s.stuck.replaced}×: ${s.stuck.detail}</dd>` : ''}
</dl>
${lastNow}
<form method="post" action="/attestations/sync" class="row">${csrfField(req)}<button type="submit"${last?.state === 'running' ? html` disabled` : ''}>Sync now</button><span class="muted">Sends the waiting lines to the chain and the attestor now, instead of at the next turn of the sync loop.</span></form>`
}

async function page(
  ctx: ConsoleContext,
  req: FastifyRequest,
  last: SyncNow | null,
  now: number,
): Promise<Html> {
  const a = ctx.attestation
  if (!a)
    return html`<h1>Attestations</h1><p class="muted">This hub does not attest: no SOP calls <code>chain_attest</code> and hub.toml has no <code>[chain]</code> section.</p>`
  const st = attestStatus(a.store, a.sync())
  const [waiting, failed] = await Promise.all([a.store.queue(WAITING_SHOWN), a.store.failed(FAILED_SHOWN)])
  const size = a.store.size()
  const newest: AttestRecord[] = []
  for await (const r of a.store.range(Math.max(0, size - NEWEST_SHOWN), size)) newest.unshift(r)
  const done = st.total ? Math.round(((st.attested + st.failed) / st.total) * 100) : 100
  return html`<h1>Attestations</h1>
<section id="attest-status" data-live="attest" aria-labelledby="sync-h">
<h2 id="sync-h">Sync</h2>
${syncSection(a, st, req, last, now)}
<h2>Lines by state</h2>
<div class="table-wrap"><table class="states">
<thead><tr><th scope="col">state</th><th scope="col">lines</th><th scope="col">meaning</th></tr></thead>
<tbody>${STATES.map(
    ([k, label, what]) =>
      html`<tr data-count="${k}"><th scope="row">${label}</th><td><strong data-figure="${k}">${String(st[k])}</strong></td><td class="muted">${what}</td></tr>`,
  )}</tbody></table></div>
<p><progress max="100" value="${done}" aria-label="lines attested or failed">${done}%</progress> ${st.attested + st.failed} of <span data-count="total">${st.total}</span> lines settled (attested or failed).</p>
</section>
<section id="attest-lines" data-live="attest" aria-labelledby="waiting-h">
<h2 id="waiting-h">Waiting to be attested</h2>
${waiting.length ? linesTable(waiting, false, now) : html`<p class="muted">No line waits.</p>`}
${st.pending + st.sending + st.requested > waiting.length ? html`<p class="muted">The first ${waiting.length} of ${st.pending + st.sending + st.requested}, oldest first.</p>` : ''}
<h2>Failed</h2>
${failed.length ? linesTable(failed, true, now) : html`<p class="muted">No line failed.</p>`}
${st.failed > failed.length ? html`<p class="muted">The first ${failed.length} of ${st.failed}.</p>` : ''}
<h2>Newest lines</h2>
${newest.length ? linesTable(newest, false, now) : html`<p class="muted">No line stored yet: lines come from SOP steps that call <code>chain_attest</code>.</p>`}
</section>`
}

export function register(app: FastifyInstance, ctx: ConsoleContext): void {
  let last: SyncNow | null = null
  const a = ctx.attestation

  // Sync moves without telling anyone: compare the figures once a second and, when they moved,
  // tell open pages (topic `attest`, which the Overview's attestation section follows too).
  if (a) {
    let seen = ''
    const timer = setInterval(() => {
      if (ctx.events.clients() === 0) return
      const s = a.sync()
      const now = JSON.stringify([a.store.counts(), s?.state, s?.line, s?.lastError, last?.state])
      if (now !== seen && seen !== '')
        ctx.events.publish('attest', { counts: a.store.counts(), sync: s?.state ?? null })
      seen = now
    }, WATCH_MS)
    timer.unref()
    app.addHook('onClose', async () => clearInterval(timer))
  }

  const show = async (req: FastifyRequest, reply: FastifyReply, status = 200): Promise<FastifyReply> =>
    ctx.render(req, reply, {
      title: 'Attestations',
      nav: 'attestations',
      body: await page(ctx, req, last, Date.now()),
      status,
    })

  app.get('/attestations', async (req, reply) => show(req, reply))

  app.post('/attestations/sync', async (req, reply) => {
    const refuse = (status: number, text: string): FastifyReply =>
      ctx.render(req, reply, {
        title: 'Attestations',
        nav: 'attestations',
        status,
        body: html`<h1>Sync now</h1><p class="error" role="alert">${text}; nothing was sent.</p><p><a href="/attestations">Attestations</a></p>`,
      })
    if (!a) return refuse(404, 'this hub does not attest (no SOP calls chain_attest and no [chain] section)')
    const syncNow = a.syncNow
    if (!syncNow)
      return refuse(
        409,
        'no [chain] sync settings on this hub: lines wait for `svc attest sync` (hub/README.md, Sync)',
      )
    if (last?.state !== 'running') {
      // Started, not awaited: a week of lines takes minutes, and the page shows the progress.
      const started: SyncNow = { state: 'running', at: Date.now() }
      last = started
      ctx.log.info({}, 'console: sync now')
      void syncNow().then(
        (report) => {
          if (last === started) last = { state: 'done', at: Date.now(), report }
        },
        (err: unknown) => {
          const error = errorText(err)
          ctx.log.warn({ err: error }, 'console: sync now failed')
          if (last === started) last = { state: 'failed', at: Date.now(), error }
        },
      )
    }
    return reply.redirect('/attestations', 303)
  })
}
