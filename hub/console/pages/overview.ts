// GET /: the hub at a glance: boards, SOPs, today's runs by state, what waits for the owner
// (approvals, held and deferred triggers), attestation and listings. Each section is a live
// region: console.js refetches it when its topics change, at most once a second.
import { dirname } from 'node:path'
import type { FastifyInstance } from 'fastify'
import type { BoardStats } from '../../../bridge/types.ts'
import type { KeptTrigger } from '../../../sops/engine-api.ts'
import type { RunState } from '../../../sops/run/states.ts'
import { type Html, html } from '../../../web/html.ts'
import type { ConsoleContext } from '../context.ts'
import { age, startOfDay, stateTag, when } from '../format.ts'
import { bytesText } from '../../disk/reserve.ts'
import type { DiskView } from '../../disk/view.ts'

/** Finished runs are counted from history up to this many per state ("1000+" past it). */
const COUNT_CAP = 1000
const FINISHED: RunState[] = ['completed', 'failed', 'cancelled']
const LIVE: RunState[] = ['pending', 'running', 'waiting_approval', 'paused_checkpoint']

async function runsToday(ctx: ConsoleContext, now: number): Promise<{ state: RunState; count: string }[]> {
  const since = startOfDay(now)
  const live = ctx.engine.liveRuns().filter((r) => r.createdAt >= since)
  const rows: { state: RunState; count: string }[] = LIVE.map((state) => ({
    state,
    count: String(live.filter((r) => r.state === state).length),
  }))
  for (const state of FINISHED) {
    const page = await ctx.engine.queryRuns({ state, since, limit: COUNT_CAP })
    rows.push({ state, count: `${page.runs.length}${page.next ? '+' : ''}` })
  }
  return rows
}

function boardsSection(ctx: ConsoleContext, now: number): Html {
  const boards = ctx.boards.list()
  const stats = ctx.boards.stats()?.boards ?? {}
  if (boards.length === 0)
    return html`<p class="muted">No boards configured (<code>[[boards]]</code> in hub.toml, or <code>svc hub --simulate NAME</code>).</p>`
  const counters = (s: BoardStats | undefined): Html | string =>
    s
      ? html`<p class="muted">${s.events} events · ${s.published} published${s.dropped ? html` · <span class="error">${s.dropped} dropped</span>` : ''}${s.oversized + s.garbage ? ` · ${s.oversized + s.garbage} bad lines` : ''}${s.reconnects ? ` · ${s.reconnects} ${s.reconnects === 1 ? 'reconnect' : 'reconnects'}` : ''}</p>`
      : ''
  return html`<ul class="cards">${boards.map(
    (b) => html`<li class="card board" data-board="${b.name}">
<h3><span class="dot ${b.availability}" aria-hidden="true"></span> ${b.name} <span class="state-${b.availability}" data-availability>${b.availability}</span></h3>
${b.since !== null ? html`<p class="muted">since ${when(b.since, now)}</p>` : ''}
<p>${b.lastEvent ? html`last event <code>${b.lastEvent.signal}</code> ${when(b.lastEvent.at, now)}: <code>${b.lastEvent.text.slice(0, 80)}</code>` : html`<span class="muted">no event yet</span>`}</p>
${counters(stats[b.name])}
</li>`,
  )}</ul>`
}

function keptSection(kept: readonly KeptTrigger[], now: number): Html {
  if (kept.length === 0) return html`<p class="muted">No held or deferred triggers.</p>`
  const bySop = new Map<string, { held: number; deferred: number; oldest: number }>()
  for (const k of kept) {
    const row = bySop.get(k.sop) ?? { held: 0, deferred: 0, oldest: k.at }
    row[k.kind] += 1
    row.oldest = Math.min(row.oldest, k.at)
    bySop.set(k.sop, row)
  }
  return html`<div class="table-wrap"><table><thead><tr><th>SOP</th><th>held</th><th>deferred</th><th>oldest waiting</th></tr></thead><tbody>${[
    ...bySop,
  ].map(
    ([sop, r]) =>
      html`<tr><td><a href="/runs?sop=${encodeURIComponent(sop)}">${sop}</a></td><td>${r.held}</td><td>${r.deferred}</td><td>${age(now - r.oldest)}</td></tr>`,
  )}</tbody></table></div>`
}

async function attestSection(ctx: ConsoleContext, now: number): Promise<Html> {
  const a = ctx.attestation
  if (!a)
    return html`<p class="muted">This hub does not attest (no SOP calls <code>chain_attest</code> and no <code>[chain]</code>).</p>`
  const c = a.store.counts()
  const waiting = c.pending + c.sending + c.requested
  const s = a.sync()
  return html`<p><span class="figure">${waiting}</span> lines waiting · ${c.attested} attested · ${c.failed ? html`<span class="error">${c.failed} failed</span>` : '0 failed'} · ${c.total} stored</p>
${
  s
    ? html`<dl class="facts"><dt>sync</dt><dd><strong>${s.state}</strong>: ${s.line}</dd>
<dt>last success</dt><dd>${s.lastRunAt ? when(Date.parse(s.lastRunAt), now) : 'never'}</dd>
<dt>last error</dt><dd>${s.lastError ? html`<span class="error">${s.lastError}</span>` : 'none'}</dd></dl>`
    : html`<p class="muted">No <code>[chain]</code> sync settings: lines wait for <code>svc attest sync</code>.</p>`
}`
}

function diskSection(d: DiskView | null, now: number): Html {
  if (!d) return html`<p class="muted">Free space is not watched on this hub.</p>`
  const space =
    d.free_bytes !== null && d.reserve_bytes !== null
      ? html`<span class="figure">${bytesText(d.free_bytes)}</span> free on <code>${d.path}</code> · reserve ${bytesText(d.reserve_bytes)}`
      : html`<span class="muted">no reading yet</span>`
  if (d.state === 'ok') return html`<p data-disk="ok">${space}</p>`
  return html`<p class="error" role="alert" data-disk="refusing">Refusing new work since ${when(Date.parse(d.since), now)}: ${d.reason ?? 'the disk is full'}. Events are not acknowledged until there is room; approvals, runs already under way and reads go on.</p>
<p>${space}${d.stores_failed ? html` · waiting to reopen ${d.stores_failed.join(', ')}` : ''}</p>`
}

async function listingsSection(ctx: ConsoleContext): Promise<Html> {
  const entries = await ctx.listings()
  const waiting = entries.filter((e) => e.state !== 'posted')
  if (entries.length === 0) return html`<p class="muted">No listings queued on this hub.</p>`
  return html`<p><span class="figure">${waiting.length}</span> waiting · ${entries.length - waiting.length} posted</p>
${waiting.length > 0 ? html`<ul>${waiting.slice(0, 10).map((e) => html`<li>${e.fields.title} <span class="tag">${e.state}</span>${e.lastError ? html` <span class="error">${e.lastError}</span>` : ''}</li>`)}</ul>` : ''}`
}

export function register(app: FastifyInstance, ctx: ConsoleContext): void {
  app.get('/', async (req, reply) => {
    const now = Date.now()
    const sops = ctx.sops()
    const invalid = ctx.diagnostics().filter((d) => d.severity === 'error')
    // A SOP folder with several errors is one SOP not loaded.
    const notLoaded = new Set(invalid.map((d) => dirname(d.file))).size
    const pending = ctx.engine.pending()
    const kept = ctx.engine.keptTriggers()
    const today = await runsToday(ctx, now)
    const body = html`<h1>Overview</h1>
<section id="ov-waiting" data-live="run kept" aria-labelledby="h-waiting">
<h2 id="h-waiting">Waiting for you</h2>
<ul class="cards">
<li class="card"><h3>Approvals</h3><p><span class="figure" data-count="approvals">${pending.length}</span> ${pending.length === 1 ? 'run waits' : 'runs wait'}</p>${pending.length > 0 ? html`<p><a href="/approvals">Review approvals</a> (the oldest waits since ${when(Math.min(...pending.map((r) => r.updatedAt)), now)})</p>` : ''}</li>
<li class="card"><h3>Held and deferred triggers</h3><p><span class="figure" data-count="kept">${kept.length}</span> kept</p></li>
</ul>
${keptSection(kept, now)}
</section>
<section id="ov-disk" data-live="disk" aria-labelledby="h-disk">
<h2 id="h-disk">Disk</h2>
${diskSection(ctx.disk?.() ?? null, now)}
</section>
<section id="ov-boards" data-live="board board-event" aria-labelledby="h-boards">
<h2 id="h-boards">Boards</h2>
${boardsSection(ctx, now)}
</section>
<section id="ov-runs" data-live="run" aria-labelledby="h-runs">
<h2 id="h-runs">Runs today</h2>
<ul class="cards states">${today.map((r) => html`<li class="card"><a href="/runs?state=${r.state}&amp;since=today">${stateTag(r.state)}</a> <span class="figure">${r.count}</span></li>`)}</ul>
</section>
<section id="ov-sops" aria-labelledby="h-sops">
<h2 id="h-sops">SOPs</h2>
<p><span class="figure">${sops.length}</span> loaded from <code>${ctx.sopsDir}</code>${invalid.length > 0 ? html` · <span class="error">${notLoaded} not loaded</span>` : ''}</p>
${invalid.length > 0 ? html`<ul class="diagnostics">${invalid.map((d) => html`<li><code>${d.file}:${d.line}</code> ${d.message}</li>`)}</ul>` : ''}
</section>
<section id="ov-attest" data-live="attest run" aria-labelledby="h-attest">
<h2 id="h-attest">Attestation</h2>
${await attestSection(ctx, now)}
</section>
<section id="ov-listings" aria-labelledby="h-listings">
<h2 id="h-listings">Listings</h2>
${await listingsSection(ctx)}
</section>`
    return ctx.render(req, reply, { title: 'Overview', nav: 'overview', body })
  })
}
