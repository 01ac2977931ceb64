// A device's page: who owns its agent, its totals (listings, attested lines, first and last
// activity), its operations over time (rows listed per day) and its listings. Pure.
import { listingCard } from './browse.ts'
import { type DayCount, opsChart } from './chart.ts'
import { type Html, html } from '../../web/html.ts'
import type { ListingSummary } from './view-types.ts'

export interface AgentFacts {
  agentId: string
  /** The agent NFT's owner (checksummed); null when the chain could not be read. */
  owner: string | null
  /** Earliest and latest record time across its listings (the data's own times when known). */
  first: string | null
  last: string | null
}

const plural = (n: number, one: string, many: string): string =>
  `${n.toLocaleString('en')} ${n === 1 ? one : many}`
const when = (iso: string): string => `${iso.replace('T', ' ').slice(0, 16)} UTC`

/**
 * First and last activity: the records' own time range where a shown listing's preview knows it,
 * else the listing dates (`span`: the agent's oldest and newest listing, from the store's index,
 * so a paged agent's ends are known without reading every listing).
 */
export function activity(
  listings: readonly ListingSummary[],
  span: { firstAt: number | null; lastAt: number | null } = { firstAt: null, lastAt: null },
): { first: string | null; last: string | null } {
  let first: string | null = span.firstAt !== null ? new Date(span.firstAt).toISOString() : null
  let last: string | null = span.lastAt !== null ? new Date(span.lastAt).toISOString() : null
  for (const l of listings) {
    const a = l.preview?.from ?? l.createdAt
    const b = l.preview?.to ?? l.createdAt
    if (first === null || a < first) first = a
    if (last === null || b > last) last = b
  }
  return { first, last }
}

export function agentMain(
  a: AgentFacts,
  days: readonly DayCount[],
  listings: readonly ListingSummary[],
  currency: string,
  /** The agent's totals when `listings` is one page of them, and the next page's link. */
  all?: { listings: number; rows: number; more: string | null },
  now?: number,
): Html {
  const rows = all?.rows ?? listings.reduce((s, l) => s + l.rows, 0)
  return html`<p class="crumbs"><a href="/marketplace">← All datasets</a></p>
<h1>Machine agent ${a.agentId}</h1>
<dl class="facts agent-facts">
  <dt>Owner</dt><dd>${a.owner ? html`<code>${a.owner}</code>` : 'not known (the chain could not be read)'}</dd>
  <dt>Listings</dt><dd>${plural(all?.listings ?? listings.length, 'listing', 'listings')}</dd>
  <dt>Attested lines</dt><dd>${plural(rows, 'line', 'lines')} listed in all</dd>
  <dt>First activity</dt><dd>${a.first ? html`<time datetime="${a.first}">${when(a.first)}</time>` : '—'}</dd>
  <dt>Last activity</dt><dd>${a.last ? html`<time datetime="${a.last}">${when(a.last)}</time>` : '—'}</dd>
</dl>
<h2>Operations over time</h2>
${opsChart(days, `Operation rows listed per day by agent ${a.agentId}, last ${days.length} days`)}
<h2>Listings</h2>
${listings.length === 0 ? html`<p>This agent has no listings.</p>` : html`<ul class="cards">${listings.map((l) => listingCard(l, currency, now))}</ul>`}
${all?.more ? html`<nav class="pager" aria-label="Pages"><a href="${all.more}" rel="next">More listings</a></nav>` : ''}`
}
