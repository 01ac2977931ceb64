// A listing's last verification as people see it: a badge on browse cards and at the top of the
// listing page, and the sentence behind it (which block, when, and why a failure failed). Pure.
import { type Html, html } from './html.ts'
import type { ListingSummary } from './view-types.ts'

type Verification = ListingSummary['verification']

const LABEL: Record<Verification['state'], string> = {
  preview: 'preview',
  unchecked: 'not checked yet',
  verified: 'verified',
  failed: 'verification failed',
}

export function verificationBadge(v: Verification): Html {
  const title = v.checkedAt ? `checked at block ${v.block}, ${v.checkedAt}` : LABEL[v.state]
  return html`<span class="tag v-${v.state}" title="${title}">${LABEL[v.state]}</span>`
}

/** The sentence under the listing's title. */
export function verificationLine(v: Verification): Html {
  switch (v.state) {
    case 'preview':
      return html`<p class="verification">${verificationBadge(v)} Sample data: no chain is read and nothing is claimed.</p>`
    case 'unchecked':
      return html`<p class="verification">${verificationBadge(v)} Nobody has verified these rows yet: press Verify below.</p>`
    case 'verified':
      return html`<p class="verification">${verificationBadge(v)} Every row passed at block ${v.block} (<time datetime="${v.checkedAt}">${v.checkedAt?.replace('T', ' ').slice(0, 16)} UTC</time>).</p>`
    case 'failed':
      return html`<p class="verification failed">${verificationBadge(v)} At block ${v.block} (<time datetime="${v.checkedAt}">${v.checkedAt?.replace('T', ' ').slice(0, 16)} UTC</time>) these rows did not verify: ${v.reason ?? 'some rows failed'}.</p>`
  }
}
