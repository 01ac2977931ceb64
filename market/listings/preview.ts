// A listing's data preview, computed once at listing time from the data file's canonical JSON
// lines: which fields the lines carry (dotted paths into nested objects), their JSON types, how
// many lines have each, numeric min/max, the time range of the records' `at` (the hub's
// chain_attest record; `ts`/`time`/`timestamp` as fallbacks), the histogram of `action` values,
// and the first lines the seller chose to publish (`preview`, a listing field: market/API.md,
// "Listing fields"). Pure. The lines come from a device and may be hostile: every name, value and count kept
// here is bounded (names, distinct fields, depth, histogram buckets, sample length), so a 10 KB
// key or a thousand-level nesting costs a line of the table, never the page. Escaping is the
// pages' job (html.ts); nothing here is markup.
import type { ManifestRow } from '../../records/index.ts'
import { MAX_PREVIEW_LINES } from '../../records/preview-field.ts'
/** Distinct fields kept; the rest are counted in `moreFields`. */
export const MAX_FIELDS = 48
/** Characters of a field name, an action value or a sample line that are kept. */
export const MAX_NAME = 64
export const MAX_ACTION = 64
export const MAX_SAMPLE = 2000
/** Objects nested deeper than this are one field of type "object". */
export const MAX_DEPTH = 3
/** Keys read per object: a line with more is summarised from its first ones. */
const MAX_KEYS = 200
const MAX_ACTIONS = 12
/** Distinct names tracked beyond MAX_FIELDS, so `moreFields` stays cheap on a hostile file. */
const MAX_TRACKED = 10_000

export type JsonType = 'string' | 'number' | 'boolean' | 'null' | 'object' | 'array'

export interface PreviewField {
  name: string
  types: JsonType[]
  /** Lines that carry the field. */
  count: number
  min: number | null
  max: number | null
}

export interface PreviewSample {
  /** 0-based line (and manifest row) index. */
  index: number
  line: string
  /** The line was longer than MAX_SAMPLE characters; `bytes` is its full length. */
  truncated: boolean
  bytes: number
  paramsHash: string
  requestHash: string
}

export interface ListingPreview {
  lines: number
  /** Lines that are not a JSON object (counted, not described). */
  otherLines: number
  fields: PreviewField[]
  moreFields: number
  timeField: string | null
  from: string | null
  to: string | null
  actions: { value: string; count: number }[]
  /** Lines whose `action` is outside the kept buckets. */
  otherActions: number
  samples: PreviewSample[]
}

const TIME_FIELDS = ['at', 'ts', 'time', 'timestamp'] as const
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/

/** Cut to `n` code points, never splitting a surrogate pair; `…` marks a cut. */
export function clip(s: string, n: number): string {
  if (s.length <= n) return s
  // n code points take at most 2n UTF-16 units.
  const cps = Array.from(s.slice(0, n * 2))
  if (cps.length <= n && s.length <= n * 2) return s
  return `${cps.slice(0, n).join('')}…`
}

const typeOf = (v: unknown): JsonType =>
  v === null
    ? 'null'
    : Array.isArray(v)
      ? 'array'
      : (typeof v as JsonType) === 'object'
        ? 'object'
        : (typeof v as JsonType)

interface Acc {
  types: Set<JsonType>
  count: number
  min: number | null
  max: number | null
}

export function buildPreview(
  lines: readonly string[],
  rows: readonly ManifestRow[],
  sampleCount: number,
): ListingPreview {
  const fields = new Map<string, Acc>()
  const extra = new Set<string>()
  const actions = new Map<string, number>()
  let otherLines = 0
  let timeField: string | null = null
  let from: number | null = null
  let to: number | null = null

  const note = (name: string, v: unknown, seen: Set<string>): void => {
    let a = fields.get(name)
    if (!a) {
      if (fields.size >= MAX_FIELDS) {
        if (extra.size < MAX_TRACKED) extra.add(name)
        return
      }
      a = { types: new Set(), count: 0, min: null, max: null }
      fields.set(name, a)
    }
    a.types.add(typeOf(v))
    // A clipped name can repeat within one line; count the line once.
    if (!seen.has(name)) {
      seen.add(name)
      a.count++
    }
    if (typeof v === 'number' && Number.isFinite(v)) {
      a.min = a.min === null ? v : Math.min(a.min, v)
      a.max = a.max === null ? v : Math.max(a.max, v)
    }
  }

  const walk = (obj: Record<string, unknown>, prefix: string, depth: number, seen: Set<string>): void => {
    let n = 0
    for (const k in obj) {
      if (++n > MAX_KEYS) break
      const v = obj[k]
      const name = clip(prefix + k, MAX_NAME)
      if (typeOf(v) === 'object' && depth < MAX_DEPTH && name.length < MAX_NAME)
        walk(v as Record<string, unknown>, `${name}.`, depth + 1, seen)
      else note(name, v, seen)
    }
  }

  for (const line of lines) {
    let v: unknown
    try {
      v = JSON.parse(line)
    } catch {
      otherLines++
      continue
    }
    if (typeOf(v) !== 'object') {
      otherLines++
      continue
    }
    const o = v as Record<string, unknown>
    walk(o, '', 1, new Set())
    if (typeof o.action === 'string') {
      const key = clip(o.action, MAX_ACTION)
      actions.set(key, (actions.get(key) ?? 0) + 1)
    }
    const tf: string | undefined =
      timeField ?? TIME_FIELDS.find((f) => typeof o[f] === 'string' && ISO.test(o[f] as string))
    if (tf !== undefined && typeof o[tf] === 'string' && ISO.test(o[tf] as string)) {
      const t = Date.parse(o[tf] as string)
      if (Number.isFinite(t)) {
        timeField = tf
        from = from === null ? t : Math.min(from, t)
        to = to === null ? t : Math.max(to, t)
      }
    }
  }

  const sorted = [...actions].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
  const kept = sorted.slice(0, MAX_ACTIONS)
  const n = Math.max(0, Math.min(sampleCount, MAX_PREVIEW_LINES, lines.length))
  return {
    lines: lines.length,
    otherLines,
    fields: [...fields].map(([name, a]) => ({
      name,
      types: [...a.types].sort(),
      count: a.count,
      min: a.min,
      max: a.max,
    })),
    moreFields: extra.size,
    timeField,
    from: from === null ? null : new Date(from).toISOString(),
    to: to === null ? null : new Date(to).toISOString(),
    actions: kept.map(([value, count]) => ({ value, count })),
    otherActions: sorted.slice(MAX_ACTIONS).reduce((s, [, c]) => s + c, 0),
    samples: lines.slice(0, n).map((line, index) => ({
      index,
      line: clip(line, MAX_SAMPLE),
      truncated: line.length > MAX_SAMPLE && clip(line, MAX_SAMPLE) !== line,
      bytes: new TextEncoder().encode(line).length,
      paramsHash: rows[index]?.paramsHash ?? '',
      requestHash: rows[index]?.requestHash ?? '',
    })),
  }
}
