// "My purchases": the signed-in buyer's receipts (listing, transaction hash, block, price, time),
// with a link to the block explorer when the market has `explorerUrl`. Pure.
import type { ReceiptView } from '../purchase/receipts.ts'
import { type Html, html } from '../../web/html.ts'

const short = (h: string): string => `${h.slice(0, 10)}…${h.slice(-6)}`

export function purchasesMain(
  account: string | null,
  receipts: readonly ReceiptView[],
  currency: string,
  explorerUrl: string | null,
): Html {
  if (!account)
    return html`<h1>My purchases</h1>
<p>Sign in with the wallet you bought with to see your purchases, their receipts and their downloads.</p>
<p><button type="button" class="sign-in-here">Sign in with wallet</button></p>`
  if (receipts.length === 0)
    return html`<h1>My purchases</h1>
<p>You have not bought a dataset with <code>${account}</code> yet. <a href="/marketplace">Browse the datasets</a>.</p>`
  const tx = (h: string) =>
    explorerUrl
      ? html`<a href="${explorerUrl}/tx/${h}" rel="noopener" title="${h}"><code>${short(h)}</code></a>`
      : html`<code title="${h}">${short(h)}</code>`
  return html`<h1>My purchases</h1>
<p>${receipts.length} ${receipts.length === 1 ? 'purchase' : 'purchases'} by <code>${account}</code>, newest first. The data and the manifest stay downloadable from each listing's page.</p>
<div class="scroll">
<table class="receipts">
<caption>Receipts</caption>
<thead><tr><th scope="col">Dataset</th><th scope="col">Transaction</th><th scope="col">Block</th><th scope="col">Paid</th><th scope="col">Unlocked (UTC)</th><th scope="col">Files</th></tr></thead>
<tbody>${receipts.map(
    (r) => html`<tr data-tx="${r.txHash}">
  <td data-label="Dataset"><a href="${r.url}">${r.title}</a></td>
  <td data-label="Transaction">${tx(r.txHash)}</td>
  <td data-label="Block">${r.block ?? '—'}</td>
  <td data-label="Paid">${r.paidNative ?? r.priceNative ?? '—'} ${currency}${r.paidNative && r.priceNative && r.paidNative !== r.priceNative ? html` <span class="muted">(price ${r.priceNative})</span>` : ''}</td>
  <td data-label="Unlocked (UTC)"><time datetime="${r.at}">${r.at.replace('T', ' ').slice(0, 16)}</time></td>
  <td data-label="Files"><span><a href="/api/marketplace/listings/${r.slug}/file?part=data" download>data</a> · <a href="/api/marketplace/listings/${r.slug}/file?part=manifest" download>manifest</a></span></td>
</tr>`,
  )}</tbody>
</table>
</div>`
}
