// One listing: title, summary and the last verification's badge, with Verify and Buy beside them
// (above the fold on a phone too), the facts, the cover image only when the seller sent one, the
// data Preview and the description as Markdown. The Buy panel becomes the download links when the
// signed-in account owns or bought it. Pure: given the listing, returns markup.
import { type Html, html } from '../../web/html.ts'
import type { ListingPreview } from '../listings/preview.ts'
import { LICENSE_TEXTS, isLicense } from './licenses.ts'
import { markdown } from './markdown.ts'
import { cachedPreviewSection } from './preview.ts'
import { verificationLine } from './verification.ts'
import type { ListingSummary } from './view-types.ts'

export type Access = 'none' | 'owner' | 'buyer'

function bytes(n: number): string {
  if (n < 1024) return `${n} B`
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`
  return `${(n / 1024 / 1024).toFixed(1)} MiB`
}

export function downloads(slug: string): Html {
  const base = `/api/marketplace/listings/${slug}/file?part=`
  return html`<ul class="downloads">
  <li><a href="${base}data" download>Download data (${slug}.jsonl)</a></li>
  <li><a href="${base}manifest" download>Download manifest (${slug}.manifest.json)</a></li>
</ul>`
}

function buySection(l: ListingSummary, access: Access, signedIn: boolean, currency: string): Html {
  if (access !== 'none')
    return html`<section aria-labelledby="buy-h" class="panel">
  <h2 id="buy-h">Files</h2>
  <p>${access === 'owner' ? 'You listed this dataset.' : html`You bought this dataset (<a href="/purchases">receipt</a>).`}</p>
  ${downloads(l.slug)}
</section>`
  if (l.sample)
    return html`<section aria-labelledby="buy-h" class="panel">
  <h2 id="buy-h">Buy</h2>
  <p>This is a sample listing: demo data, not attested and not for sale.</p>
</section>`
  return html`<section aria-labelledby="buy-h" class="panel" id="buy" data-slug="${l.slug}" data-price-wei="${l.priceWei}" data-price="${l.priceNative}" data-payout="${l.payout}">
  <h2 id="buy-h">Buy</h2>
  <p>Price: <strong>${l.priceNative} ${currency}</strong>, paid from your wallet to <code>${l.payout}</code>.</p>
  ${
    l.verification.state === 'failed'
      ? html`<p class="warn">The last verification of these rows failed (see above): what you would buy is not what the chain attests.</p>
  <label class="accept"><input type="checkbox" id="accept-unverified"> I have read this and want to buy it anyway</label>`
      : ''
  }
  <button type="button" id="buy-button">Buy for ${l.priceNative} ${currency}</button>
  <div id="buy-status" role="status" aria-live="polite"></div>
  <div id="buy-result"></div>
  <details class="steps"><summary>What happens when you buy</summary>
  <ol>
    <li>${signedIn ? 'You are signed in' : 'Sign in with your wallet'}</li>
    <li>Send the payment from your wallet</li>
    <li>Sign the unlock message</li>
    <li>Download the data and the manifest; the receipt is under <a href="/purchases">My purchases</a></li>
  </ol>
  </details>
</section>`
}

export function listingMain(
  l: ListingSummary,
  access: Access,
  signedIn: boolean,
  currency: string,
  preview?: ListingPreview,
  now?: number,
): Html {
  const license = isLicense(l.license) ? LICENSE_TEXTS[l.license] : null
  return html`<p class="crumbs"><a href="/marketplace">← All datasets</a></p>
<div class="listing-top">
<header class="listing-head">
  <h1>${l.title}</h1>
  <p class="summary">${l.summary}</p>
  ${verificationLine(l.verification, now)}
</header>
<div class="listing-actions">
<section aria-labelledby="verify-h" class="panel" id="verify" data-slug="${l.slug}">
  <h2 id="verify-h">Verify</h2>
  <p>Check every row against the validation registry on chain. No wallet or payment needed.</p>
  <button type="button" id="verify-button">Verify rows</button>
  <div id="verify-status" role="status" aria-live="polite"></div>
</section>
${buySection(l, access, signedIn, currency)}
</div>
<dl class="facts">
  <dt>Price</dt><dd>${l.priceNative} ${currency}</dd>
  <dt>Rows</dt><dd id="row-count">${l.rows.toLocaleString('en')}</dd>
  <dt>Data size</dt><dd>${bytes(l.dataBytes)}</dd>
  <dt>Machine type</dt><dd><a href="/marketplace?machineType=${l.machineType}">${l.machineType}</a></dd>
  <dt>Licence</dt><dd>${license ? html`<a href="/licenses/${l.license}">${license.name}</a>: ${license.short}` : l.license}</dd>
  <dt>Agent</dt><dd>${l.sample ? l.agentId : html`<a href="/agents/${l.agentId}">${l.agentId}</a> (owner, activity)`}</dd>
  <dt>Listed</dt><dd><time datetime="${l.createdAt}">${l.createdAt.slice(0, 10)}</time></dd>
  ${l.sample ? html`<dt>Status</dt><dd>sample (demo data)</dd>` : ''}
</dl>
${l.imageUrl ? html`<img class="cover" src="${l.imageUrl}" alt="Cover image of ${l.title}">` : ''}
<div id="verify-result" class="verify-result"></div>
</div>
${cachedPreviewSection(l.slug, preview, l.verification)}
<section aria-labelledby="description-h" class="description">
  <h2 id="description-h">Description</h2>
  ${markdown(l.description)}
</section>`
}
