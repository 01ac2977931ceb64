// A listing's last verification as people see it: a badge on browse cards and at the top of the
// listing page, and the sentence behind it (which block, when, and why a failure failed). Pure.
import { type Html, html } from '../../web/html.ts'
import type { ListingSummary } from './view-types.ts'

type Verification = ListingSummary['verification']

/** A verdict older than this is marked stale: the background re-check should have renewed it. */
export const STALE_MS = 24 * 3600 * 1000

const LABEL: Record<Verification['state'], string> = {
  preview: 'preview',
  unchecked: 'not checked yet',
  verified: 'verified',
  failed: 'verification failed',
}

const isStale = (v: Verification, now: number | undefined): boolean =>
  now !== undefined && v.checkedAt !== null && now - Date.parse(v.checkedAt) > STALE_MS

/** `now`: when given, a verdict older than STALE_MS says so. */
export function verificationBadge(v: Verification, now?: number): Html {
  const title = v.checkedAt ? `checked at block ${v.block}, ${v.checkedAt}` : LABEL[v.state]
  const stale = isStale(v, now)
  return html`<span class="tag v-${v.state}${stale ? ' v-stale' : ''}" title="${title}">${LABEL[v.state]}${stale ? ' (stale)' : ''}</span>`
}

/**
 * The stored reason names the first failing row 0-based (`row 8: …`); the pages number rows from
 * 1, as the verify tables and `svc attest verify-line --line` do.
 */
function reasonText(reason: string | null): string {
  if (!reason) return 'some rows failed'
  const m = /^row (\d+): /.exec(reason)
  return m ? `row ${Number(m[1]) + 1}: ${reason.slice(m[0].length)}` : reason
}

/** The sentence under the listing's title. */
export function verificationLine(v: Verification, now?: number): Html {
  const stale = isStale(v, now)
    ? html` <strong>This verdict is over a day old</strong>: press Verify to check again.`
    : ''
  switch (v.state) {
    case 'preview':
      return html`<p class="verification">${verificationBadge(v, now)} Sample data: no chain is read and nothing is claimed.</p>`
    case 'unchecked':
      return html`<p class="verification">${verificationBadge(v, now)} Nobody has verified these rows yet: press Verify.</p>`
    case 'verified':
      return html`<p class="verification">${verificationBadge(v, now)} Every row passed at block ${v.block} (<time datetime="${v.checkedAt}">${v.checkedAt?.replace('T', ' ').slice(0, 16)} UTC</time>).${stale}</p>`
    case 'failed':
      return html`<p class="verification failed">${verificationBadge(v, now)} At block ${v.block} (<time datetime="${v.checkedAt}">${v.checkedAt?.replace('T', ' ').slice(0, 16)} UTC</time>) these rows did not verify: ${reasonText(v.reason)}.${stale}</p>`
  }
}
