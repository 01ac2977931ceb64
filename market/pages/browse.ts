// The browse page: filters (machine type, license, price range), title search, listing cards
// and pagination. Pure: given the API's answer, returns markup.
import type { Failure } from '../../errors/codes.ts'
import { LICENSES, MACHINE_TYPES } from '../../records/listing-fields.ts'
import { type Html, html } from '../../web/html.ts'
import { verificationBadge } from './verification.ts'
import type { ListingSummary } from './view-types.ts'

export const PAGE_SIZE = 24
export const MAX_OFFSET = 1_000_000

export interface BrowseQuery {
  q: string
  machineType: string
  license: string
  minPrice: string
  maxPrice: string
  /** '' (newest), 'price' or 'rows'. */
  sort: string
  /** The API's page cursors: `cursor` (next) or `before` (previous); `offset` then only numbers the page. */
  cursor: string
  before: string
  offset: number
}

export type BrowseResult =
  | { ok: true; total: number; listings: ListingSummary[]; next?: string | null; prev?: string | null }
  | Failure

const FILTER_KEYS = ['q', 'machineType', 'license', 'minPrice', 'maxPrice', 'sort'] as const
const SORT_OPTIONS: [string, string][] = [
  ['', 'Newest'],
  ['price', 'Price, lowest first'],
  ['rows', 'Most rows'],
]

/** Read the browse query from a request's query object; unknown keys and non-strings are ignored. */
export function browseQuery(raw: Record<string, unknown>): BrowseQuery {
  const s = (k: string): string => (typeof raw[k] === 'string' ? (raw[k] as string).trim().slice(0, 200) : '')
  const off = Number(s('offset'))
  // Paging past a million listings is not a use case; a huge offset is clamped, not an error.
  const offset = Number.isInteger(off) && off > 0 ? Math.min(off, MAX_OFFSET) : 0
  return {
    q: s('q'),
    machineType: s('machineType'),
    license: s('license'),
    minPrice: s('minPrice'),
    maxPrice: s('maxPrice'),
    sort: s('sort') === 'newest' ? '' : s('sort'),
    cursor: s('cursor').slice(0, 400),
    before: s('before').slice(0, 400),
    offset,
  }
}

/** The API query string for a browse query: empty filters are left out. */
export function apiQuery(b: BrowseQuery, limit = PAGE_SIZE): string {
  const p = new URLSearchParams()
  for (const k of FILTER_KEYS) if (b[k] !== '') p.set(k, b[k])
  p.set('limit', String(limit))
  // A cursor page is read from the index at the cursor; the offset then only numbers it.
  if (b.cursor) p.set('cursor', b.cursor)
  else if (b.before) p.set('before', b.before)
  else if (b.offset > 0) p.set('offset', String(b.offset))
  return p.toString()
}

function pageHref(b: BrowseQuery, offset: number, cursor?: ['cursor' | 'before', string]): string {
  const p = new URLSearchParams()
  for (const k of FILTER_KEYS) if (b[k] !== '') p.set(k, b[k])
  if (cursor && offset > 0) p.set(cursor[0], cursor[1])
  if (offset > 0) p.set('offset', String(offset))
  const s = p.toString()
  return s ? `/marketplace?${s}` : '/marketplace'
}

function select(name: string, label: string, options: readonly string[], current: string): Html {
  return html`<label>${label}
    <select name="${name}">
      <option value="">Any</option>
      ${options.map((o) => html`<option value="${o}"${o === current ? html` selected` : ''}>${o}</option>`)}
    </select></label>`
}

const day = (iso: string): string => iso.slice(0, 10)

/** Rows, the time range of the records and the field count, from the listing's preview. */
function dataFacts(l: ListingSummary): Html {
  const p = l.preview
  const range =
    p?.from && p.to ? (day(p.from) === day(p.to) ? day(p.from) : `${day(p.from)} → ${day(p.to)}`) : null
  return html`<p class="data-facts">${l.rows.toLocaleString('en')} ${l.rows === 1 ? 'row' : 'rows'}${
    p ? html` · ${p.fields} ${p.fields === 1 ? 'field' : 'fields'}` : ''
  }${range ? html` · <time datetime="${p!.from}">${range}</time>` : ''}</p>`
}

export function listingCard(l: ListingSummary, currency: string, now?: number): Html {
  return html`<li class="card">
  <p class="card-top">${l.sample ? html`<span class="tag sample">sample</span>` : verificationBadge(l.verification, now)} <span class="price">${l.priceNative} ${currency}</span></p>
  ${l.imageUrl ? html`<img src="${l.imageUrl}" alt="" loading="lazy">` : ''}
  <h2><a href="${l.url}">${l.title}</a></h2>
  <p>${l.summary}</p>
  ${dataFacts(l)}
  <p class="meta"><span class="tag">${l.machineType}</span> <span class="tag">${l.license}</span></p>
</li>`
}

export function browseMain(b: BrowseQuery, r: BrowseResult, currency: string, now?: number): Html {
  const active = FILTER_KEYS.filter((k) => k !== 'q' && k !== 'sort' && b[k] !== '').length
  // The filters fold away on a phone unless one is set (browse.js opens them on a wide screen).
  const filters = html`<form class="filters" method="get" action="/marketplace" role="search" aria-label="Filter listings">
  <label class="search">Search titles and summaries <input type="search" name="q" value="${b.q}" maxlength="200"></label>
  <label class="sort">Sort <select name="sort">${SORT_OPTIONS.map(([v, t]) => html`<option value="${v}"${v === b.sort ? html` selected` : ''}>${t}</option>`)}</select></label>
  <details class="more"${active > 0 || !r.ok ? html` open` : ''}>
    <summary>Filters${active > 0 ? ` (${active} set)` : ''}</summary>
    <div class="more-fields">
    ${select('machineType', 'Machine type', MACHINE_TYPES, b.machineType)}
    ${select('license', 'License', LICENSES, b.license)}
    <label>Min price (${currency}) <input name="minPrice" inputmode="decimal" value="${b.minPrice}" size="8"></label>
    <label>Max price (${currency}) <input name="maxPrice" inputmode="decimal" value="${b.maxPrice}" size="8"></label>
    </div>
  </details>
  <div class="filter-actions"><button type="submit">Filter</button> <a class="clear" href="/marketplace">Clear</a></div>
</form>`
  if (!r.ok)
    return html`<h1>Datasets</h1>${filters}<p class="error" role="alert">Cannot filter: ${r.error}</p>`
  const from = r.total === 0 ? 0 : b.offset + 1
  const to = b.offset + r.listings.length
  const prevAt = Math.max(0, b.offset - PAGE_SIZE)
  const hasPrev = r.prev !== undefined ? r.prev !== null || b.offset > 0 : b.offset > 0
  const hasNext = r.next !== undefined ? r.next !== null : to < r.total
  const pager = html`<nav class="pager" aria-label="Pages">
  ${hasPrev ? html`<a href="${pageHref(b, prevAt, r.prev ? ['before', r.prev] : undefined)}" rel="prev">Previous</a>` : ''}
  ${hasNext ? html`<a href="${pageHref(b, to, r.next ? ['cursor', r.next] : undefined)}" rel="next">Next</a>` : ''}
</nav>`
  return html`<h1>Datasets</h1>
${filters}
<p class="count" id="result-count">${
    r.total === 0
      ? 'No listings match.'
      : r.listings.length === 0
        ? html`No listings on this page: ${r.total} match. <a href="${pageHref(b, 0)}">First page</a>`
        : `Showing ${from}–${to} of ${r.total} listings.`
  }</p>
<ul class="cards" aria-labelledby="result-count">
${r.listings.map((l) => listingCard(l, currency, now))}
</ul>
${pager}`
}
