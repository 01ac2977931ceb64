// Listing indexes on LevelDB: sorted keys per (sort, facet), a posting list per word, an agent's
// listings by date, and counters, all written in the listing's own sync batch. A browse walks one
// key range from its cursor and stops when the page is full; a search reads the postings of its
// rarest word only. Nothing here reads every listing.
//
//   o!<sort>!<facet>!<sortKey>!<slug>  → { c, p, r }            (facet: *, m=…, l=…, m=…,l=…)
//   w!<word>!<slug>                    → { c, p, r, m, l, t }   (t: the listing's words)
//   a!<agentId>!<newestKey>!<slug>     → { c, r }               (samples left out)
//   counters: f!<facet> → n, w!<word> → n, a!<agentId> → { n, rows }
import { compareBy, facetOf, facetsOf, listingWords } from './browse-order.ts'
import type { ListingRecord } from './records.ts'
import type { AgentStats, BrowsePage, BrowseQuery, Cursor, Sort } from './store.ts'

interface Range {
  gt?: string
  gte?: string
  lt?: string
  lte?: string
  reverse?: boolean
  limit?: number
}
/** The slice of a JSON sublevel used here (LevelDB's typings do not carry `sync` through). */
export interface Sublevel<V> {
  get(key: string): Promise<V | undefined>
  getMany(keys: string[]): Promise<(V | undefined)[]>
  put(key: string, value: V, options?: { sync?: boolean }): Promise<void>
  del(key: string, options?: { sync?: boolean }): Promise<void>
  clear(): Promise<void>
  keys(range?: Range): AsyncIterable<string>
  values(range?: Range): AsyncIterable<V>
  iterator(range?: Range): AsyncIterable<[string, V]>
}

interface Entry {
  c: number
  p: string
  r: number
}
interface Posting extends Entry {
  m: string
  l: string
  t: string[]
}
interface AgentCount {
  n: number
  rows: number
}
type Count = number | AgentCount

export interface ListingIndex {
  index: Sublevel<Entry | Posting>
  counts: Sublevel<Count>
  listings: Sublevel<ListingRecord>
}

export type BatchOp =
  | { type: 'put'; sublevel: Sublevel<never>; key: string; value: unknown }
  | { type: 'del'; sublevel: Sublevel<never>; key: string }

const TOP = 9_000_000_000_000_000 // below 2^53: newest and largest first, as ascending keys
const pad = (n: number | bigint | string, width: number): string => String(n).padStart(width, '0')
const END = '\xff'

function sortKey(sort: Sort, value: number | string): string {
  if (sort === 'price') return pad(value, 60)
  return pad(TOP - Number(value), 16)
}
const keyOf = (sort: Sort, c: { value: number | string; slug: string }): string =>
  `${sortKey(sort, c.value)}!${c.slug}`

const entryOf = (l: ListingRecord): Entry => ({ c: l.createdAt, p: l.priceWei, r: l.rows })
const entryValue = (sort: Sort, e: Entry): number | string =>
  sort === 'newest' ? e.c : sort === 'price' ? e.p : e.r

/** The index keys (and values) of one listing. */
function indexEntries(l: ListingRecord): [string, Entry | Posting][] {
  const e = entryOf(l)
  const out: [string, Entry | Posting][] = []
  for (const sort of ['newest', 'price', 'rows'] as const)
    for (const f of facetsOf(l))
      out.push([`o!${sort}!${f}!${keyOf(sort, { value: entryValue(sort, e), slug: l.slug })}`, e])
  const t = listingWords(l)
  for (const w of t) out.push([`w!${w}!${l.slug}`, { ...e, m: l.machineType, l: l.license, t }])
  if (!l.sample) out.push([`a!${l.agentId}!${sortKey('newest', l.createdAt)}!${l.slug}`, e])
  return out
}

function counterDeltas(l: ListingRecord, sign: 1 | -1, into: Map<string, AgentCount>): void {
  const add = (k: string, n: number, rows: number) => {
    const d = into.get(k) ?? { n: 0, rows: 0 }
    d.n += n
    d.rows += rows
    into.set(k, d)
  }
  for (const f of facetsOf(l)) add(`f!${f}`, sign, 0)
  for (const w of listingWords(l)) add(`w!${w}`, sign, 0)
  if (!l.sample) add(`a!${l.agentId}`, sign, sign * l.rows)
}

/**
 * The batch that replaces `old` (or nothing) by `rec` with its index entries and counters. Run
 * under the store's listing lock: the counters are read here and written in the same batch.
 */
export async function listingOps(
  ix: ListingIndex,
  changes: { old: ListingRecord | undefined; rec: ListingRecord }[],
): Promise<BatchOp[]> {
  const ops: BatchOp[] = []
  const deltas = new Map<string, AgentCount>()
  const idx = ix.index as unknown as Sublevel<never>
  for (const { old, rec } of changes) {
    if (old) {
      for (const [k] of indexEntries(old)) ops.push({ type: 'del', sublevel: idx, key: k })
      counterDeltas(old, -1, deltas)
    }
    for (const [k, v] of indexEntries(rec)) ops.push({ type: 'put', sublevel: idx, key: k, value: v })
    counterDeltas(rec, 1, deltas)
    ops.push({ type: 'put', sublevel: ix.listings as unknown as Sublevel<never>, key: rec.slug, value: rec })
  }
  const cs = ix.counts as unknown as Sublevel<never>
  for (const [k, d] of deltas) {
    if (d.n === 0 && d.rows === 0) continue
    const cur = await ix.counts.get(k)
    if (k.startsWith('a!')) {
      const c = (cur as AgentCount | undefined) ?? { n: 0, rows: 0 }
      ops.push({ type: 'put', sublevel: cs, key: k, value: { n: c.n + d.n, rows: c.rows + d.rows } })
    } else ops.push({ type: 'put', sublevel: cs, key: k, value: ((cur as number | undefined) ?? 0) + d.n })
  }
  return ops
}

async function counter(ix: ListingIndex, key: string): Promise<number> {
  return ((await ix.counts.get(key)) as number | undefined) ?? 0
}

async function docs(ix: ListingIndex, slugs: string[]): Promise<ListingRecord[]> {
  const got = await ix.listings.getMany(slugs)
  return got.filter((l): l is ListingRecord => l !== undefined)
}

/** Fills in next/prev from one extra row fetched beyond the page (`more`). */
function page(
  q: BrowseQuery,
  total: number,
  listings: ListingRecord[],
  cursorOf: (l: ListingRecord) => Cursor,
  more: boolean,
): BrowsePage {
  const first = listings[0]
  const last = listings[listings.length - 1]
  if (q.before)
    return {
      total,
      listings,
      prev: more && first ? cursorOf(first) : null,
      next: last ? cursorOf(last) : null,
    }
  return {
    total,
    listings,
    next: more && last ? cursorOf(last) : null,
    prev: (q.after || (q.offset ?? 0) > 0) && first ? cursorOf(first) : null,
  }
}

const cursorFor =
  (sort: Sort) =>
  (l: ListingRecord): Cursor => ({
    sort,
    value: sort === 'newest' ? l.createdAt : sort === 'price' ? l.priceWei : l.rows,
    slug: l.slug,
  })

export async function browseLevel(ix: ListingIndex, q: BrowseQuery): Promise<BrowsePage> {
  if (q.words.length > 0) return searchLevel(ix, q)
  const facet = facetOf(q.machineType, q.license)
  const prefix = `o!${q.sort}!${facet}!`
  let gte = prefix
  let lt = prefix + END
  const priced = q.minWei !== undefined || q.maxWei !== undefined
  if (q.sort === 'price') {
    // The price order is the key order: the range is the filter.
    if (q.minWei !== undefined) gte = prefix + pad(q.minWei, 60)
    if (q.maxWei !== undefined) lt = `${prefix}${pad(q.maxWei, 60)}!${END}`
  }
  const inRange = (p: string): boolean => {
    const v = BigInt(p)
    return (q.minWei === undefined || v >= q.minWei) && (q.maxWei === undefined || v <= q.maxWei)
  }
  const range: { gte?: string; gt?: string; lt?: string; lte?: string; reverse?: boolean } = { gte, lt }
  if (q.after) {
    const k = prefix + keyOf(q.sort, q.after)
    if (k >= gte) {
      delete range.gte
      range.gt = k
    }
  } else if (q.before) {
    const k = prefix + keyOf(q.sort, q.before)
    if (k < lt) range.lt = k
    range.reverse = true
  }
  const slugs: string[] = []
  let skip = q.before ? 0 : (q.offset ?? 0)
  for await (const [k, e] of ix.index.iterator(range)) {
    if (q.sort !== 'price' && priced && !inRange((e as Entry).p)) continue
    if (skip > 0) {
      skip--
      continue
    }
    slugs.push(k.slice(k.lastIndexOf('!') + 1))
    if (slugs.length > q.limit) break
  }
  const more = slugs.length > q.limit
  if (more) slugs.pop()
  if (q.before) slugs.reverse()
  let total: number
  if (!priced) total = await counter(ix, `f!${facet}`)
  else {
    // Counted on the facet's price order, whose key range is exactly the price filter.
    const p = `o!price!${facet}!`
    total = 0
    const r = {
      gte: q.minWei !== undefined ? p + pad(q.minWei, 60) : p,
      lt: q.maxWei !== undefined ? `${p}${pad(q.maxWei, 60)}!${END}` : p + END,
    }
    for await (const _ of ix.index.keys(r)) total++
  }
  return page(q, total, await docs(ix, slugs), cursorFor(q.sort), more)
}

/** Search: the postings of the rarest query word, filtered and ordered in memory. */
async function searchLevel(ix: ListingIndex, q: BrowseQuery): Promise<BrowsePage> {
  const counts = await Promise.all(q.words.map((w) => counter(ix, `w!${w}`)))
  let rarest = 0
  for (let i = 1; i < counts.length; i++) if (counts[i]! < counts[rarest]!) rarest = i
  const empty: BrowsePage = { total: 0, listings: [], next: null, prev: null }
  if (counts[rarest] === 0) return empty
  const w = q.words[rarest]!
  const hits: { value: number | string; slug: string }[] = []
  const p = `w!${w}!`
  for await (const [k, v] of ix.index.iterator({ gte: p, lt: p + END })) {
    const e = v as Posting
    if (q.machineType && e.m !== q.machineType) continue
    if (q.license && e.l !== q.license) continue
    const price = BigInt(e.p)
    if (q.minWei !== undefined && price < q.minWei) continue
    if (q.maxWei !== undefined && price > q.maxWei) continue
    if (!q.words.every((x) => e.t.includes(x))) continue
    hits.push({ value: entryValue(q.sort, e), slug: k.slice(p.length) })
  }
  hits.sort((a, b) => compareBy(q.sort, a, b))
  let from = q.offset ?? 0
  let to: number
  if (q.after) {
    const a = q.after
    from = hits.findIndex((h) => compareBy(q.sort, h, a) > 0)
    if (from < 0) from = hits.length
  }
  if (q.before) {
    const b = q.before
    let end = hits.findIndex((h) => compareBy(q.sort, h, b) >= 0)
    if (end < 0) end = hits.length
    from = Math.max(0, end - q.limit)
    to = end
    const listings = await docs(
      ix,
      hits.slice(from, to).map((h) => h.slug),
    )
    return page(q, hits.length, listings, cursorFor(q.sort), from > 0)
  }
  to = from + q.limit
  const listings = await docs(
    ix,
    hits.slice(from, to).map((h) => h.slug),
  )
  return page(q, hits.length, listings, cursorFor(q.sort), to < hits.length)
}

export async function agentListingsLevel(
  ix: ListingIndex,
  agentId: string,
  limit: number,
  after?: Cursor,
): Promise<{ listings: ListingRecord[]; next: Cursor | null }> {
  const p = `a!${agentId}!`
  const slugs: string[] = []
  const range = after ? { gt: p + keyOf('newest', after), lt: p + END } : { gte: p, lt: p + END }
  for await (const k of ix.index.keys({ ...range, limit: limit + 1 }))
    slugs.push(k.slice(k.lastIndexOf('!') + 1))
  const more = slugs.length > limit
  if (more) slugs.pop()
  const listings = await docs(ix, slugs)
  const last = listings[listings.length - 1]
  return { listings, next: more && last ? cursorFor('newest')(last) : null }
}

export async function agentStatsLevel(ix: ListingIndex, agentId: string, since: number): Promise<AgentStats> {
  const c = ((await ix.counts.get(`a!${agentId}`)) as AgentCount | undefined) ?? { n: 0, rows: 0 }
  const p = `a!${agentId}!`
  const recent: AgentStats['recent'] = []
  // Newest first, so the walk stops at the first listing older than `since`.
  for await (const v of ix.index.values({ gte: p, lte: `${p}${sortKey('newest', since)}!${END}` })) {
    const e = v as Entry
    recent.push({ createdAt: e.c, rows: e.r })
  }
  // The agent's index is newest first: its two ends are the newest and the oldest listing.
  const end = async (reverse: boolean): Promise<number | null> => {
    for await (const v of ix.index.values({ gte: p, lt: p + END, reverse, limit: 1 })) return (v as Entry).c
    return null
  }
  const [lastAt, firstAt] = await Promise.all([end(false), end(true)])
  return { listings: c.n, rows: c.rows, recent, firstAt, lastAt }
}
