// The held and deferred triggers per SOP (sops/RUNTIME.md, "Kept triggers"; sops/run/backlog.ts, the same
// figures as `svc sop held`), as a table: how many wait, for how long, and why. Shown on the SOPs
// page (all SOPs) and on each SOP's page (that SOP); the region is live on the `kept` topic, so
// it grows and drains as triggers are kept and released.
import type { KeptTrigger } from '../../../sops/engine-api.ts'
import { backlog } from '../../../sops/run/backlog.ts'
import { type Html, html } from '../../../web/html.ts'
import { age, when } from '../format.ts'

export function heldBacklogView(kept: readonly KeptTrigger[], now: number, opts: { links: boolean }): Html {
  const rows = backlog(kept, now)
  if (rows.length === 0)
    return html`<p class="muted" data-backlog="0">No held or deferred triggers: every trigger was admitted.</p>`
  const total = rows.reduce((n, r) => n + r.count, 0)
  return html`<div class="table-wrap"><table data-backlog="${total}">
<thead><tr><th scope="col">SOP</th><th scope="col">held</th><th scope="col">deferred</th><th scope="col">oldest waits</th><th scope="col" class="hide-narrow">newest</th><th scope="col" class="hide-narrow">why</th></tr></thead>
<tbody>${rows.map(
    (r) =>
      html`<tr data-sop="${r.sop}"><td>${opts.links ? html`<a href="/sops/${encodeURIComponent(r.sop)}">${r.sop}</a>` : r.sop}</td><td data-held="${r.held}">${r.held}</td><td data-deferred="${r.deferred}">${r.deferred}</td><td><span title="since ${new Date(r.oldestAt).toISOString()}">${age(r.oldestAgeMs)}</span></td><td class="hide-narrow">${when(r.newestAt, now)}</td><td class="hide-narrow">${r.reason}</td></tr>`,
  )}</tbody></table></div>`
}
