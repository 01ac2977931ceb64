// A device's page: its operations over time (rows listed per day) and its listings. Pure.
import { listingCard } from './browse.ts'
import { type DayCount, opsChart } from './chart.ts'
import { type Html, html } from './html.ts'
import type { ListingSummary } from './view-types.ts'

export function agentMain(
  agentId: string,
  days: readonly DayCount[],
  listings: readonly ListingSummary[],
  currency: string,
  /** The agent's totals when `listings` is one page of them, and the next page's link. */
  all?: { listings: number; rows: number; more: string | null },
): Html {
  const rows = all?.rows ?? listings.reduce((s, l) => s + l.rows, 0)
  return html`<p class="crumbs"><a href="/marketplace">← All datasets</a></p>
<h1>Machine agent ${agentId}</h1>
<p>${all?.listings ?? listings.length} listings with ${rows.toLocaleString('en')} operation rows in all.</p>
<h2>Operations over time</h2>
${opsChart(days, `Operation rows listed per day by agent ${agentId}, last ${days.length} days`)}
<h2>Listings</h2>
${listings.length === 0 ? html`<p>This agent has no listings.</p>` : html`<ul class="cards">${listings.map((l) => listingCard(l, currency))}</ul>`}
${all?.more ? html`<nav class="pager" aria-label="Pages"><a href="${all.more}" rel="next">More listings</a></nav>` : ''}`
}
