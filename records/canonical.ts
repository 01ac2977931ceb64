// One record → one line: RFC 8785 (JSON Canonicalization Scheme) via the `canonicalize`
// package. JCS escapes control characters inside strings, so a canonical line never holds a
// raw newline and can sit on one line of operations.jsonl (sops/RUNTIME.md, "Attested lines").
import canonicalize from 'canonicalize'
import { type Failure, fail } from '../errors/codes.ts'

/** A record is the caller's value: one JSON cannot carry is BAD_INPUT. */
export type CanonicalResult = { ok: true; line: string } | Failure<'BAD_INPUT'>

/** Finds the first value JSON cannot carry faithfully (RFC 8785 §3.2.2.3: no NaN/Infinity). */
function badValue(v: unknown, path: string): string | undefined {
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return undefined
  if (typeof v === 'number') return Number.isFinite(v) ? undefined : `${path}: ${v} is not a JSON number`
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const bad = badValue(v[i], `${path}[${i}]`)
      if (bad) return bad
    }
    return undefined
  }
  if (typeof v === 'object') {
    const proto = Object.getPrototypeOf(v)
    if (proto !== Object.prototype && proto !== null) return `${path}: not a plain JSON object`
    for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
      const bad = badValue(x, `${path}.${k}`)
      if (bad) return bad
    }
    return undefined
  }
  return `${path}: ${typeof v} is not JSON`
}

/** The canonical line of a record, or why it has none. */
export function tryCanonicalLine(record: unknown): CanonicalResult {
  const bad = badValue(record, '$')
  if (bad) return fail('BAD_INPUT', bad)
  const line = canonicalize(record)
  if (line === undefined) return fail('BAD_INPUT', '$: not JSON')
  return { ok: true, line }
}

/** The canonical line of a record; throws on a value JSON cannot hold (NaN, undefined, a class). */
export function canonicalLine(record: unknown): string {
  const r = tryCanonicalLine(record)
  if (!r.ok) throw new TypeError(`cannot canonicalise record: ${r.error}`)
  return r.line
}
