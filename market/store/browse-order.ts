// The order, cursors, words and facets that both engines index listings by. Pure: one meaning of
// "newest", "a word of the title" and "the page after this one" whatever the engine.
import type { ListingRecord } from './records.ts'
import { type Cursor, SORTS, type Sort } from './store.ts'

/** The value a listing is sorted by. */
export function sortValue(l: ListingRecord, sort: Sort): number | string {
  return sort === 'newest' ? l.createdAt : sort === 'price' ? l.priceWei : l.rows
}

export function cursorOf(l: ListingRecord, sort: Sort): Cursor {
  return { sort, value: sortValue(l, sort), slug: l.slug }
}

/** Negative when `a` comes first in `sort` order. The slug breaks ties, so the order is total. */
export function compareBy(sort: Sort, a: { value: number | string; slug: string }, b: typeof a): number {
  let d: number
  if (sort === 'price') {
    const x = BigInt(a.value)
    const y = BigInt(b.value)
    d = x < y ? -1 : x > y ? 1 : 0
  } else d = Number(b.value) - Number(a.value) // newest and rows: larger first
  return d !== 0 ? d : a.slug < b.slug ? -1 : a.slug > b.slug ? 1 : 0
}

/** The opaque `cursor` of the read API: base64url of JSON, checked when read back. */
export function encodeCursor(c: Cursor): string {
  return Buffer.from(JSON.stringify([c.sort, c.value, c.slug])).toString('base64url')
}

export function decodeCursor(s: string): Cursor | null {
  if (s.length > 400 || !/^[A-Za-z0-9_-]+$/.test(s)) return null
  let v: unknown
  try {
    v = JSON.parse(Buffer.from(s, 'base64url').toString('utf8'))
  } catch {
    return null
  }
  if (!Array.isArray(v) || v.length !== 3) return null
  const [sort, value, slug] = v as [unknown, unknown, unknown]
  if (!(SORTS as readonly unknown[]).includes(sort)) return null
  if (typeof slug !== 'string' || !/^[a-z0-9-]{1,160}$/.test(slug)) return null
  if (sort === 'price') {
    if (typeof value !== 'string' || !/^(0|[1-9][0-9]{0,59})$/.test(value)) return null
  } else if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) return null
  return { sort: sort as Sort, value, slug }
}

/** Lowercase words of letters and digits; what search matches, word for word. */
export function words(text: string): string[] {
  return [
    ...new Set(
      text
        .toLowerCase()
        .split(/[^\p{L}\p{N}]+/u)
        .filter((w) => w.length > 0 && w.length <= 64),
    ),
  ]
}

export function listingWords(l: Pick<ListingRecord, 'title' | 'summary'>): string[] {
  return words(`${l.title} ${l.summary}`)
}

/**
 * The counted groups a listing belongs to: every listing (`*`), its machine type, its licence,
 * both, and (not for samples) its agent. Totals of unfiltered and type/licence-filtered browses
 * and the agent page's totals are these counters, read in one step.
 */
export function facetsOf(l: Pick<ListingRecord, 'machineType' | 'license'>): string[] {
  return ['*', `m=${l.machineType}`, `l=${l.license}`, `m=${l.machineType},l=${l.license}`]
}

export function facetOf(machineType?: string, license?: string): string {
  if (machineType && license) return `m=${machineType},l=${license}`
  if (machineType) return `m=${machineType}`
  if (license) return `l=${license}`
  return '*'
}
