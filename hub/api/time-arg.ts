// A point in time as a person or a script writes it on a command line or in a query string:
// an ISO 8601 date or date-time, ms since the epoch, or a span back from now (`30m`, `2h`, `7d`).
// Pure: `now` comes in.
import { fail, type Result } from '../../errors/codes.ts'

const SPAN = /^(\d{1,9})(s|m|h|d|w)$/
const UNIT: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 }
// Date.parse takes much that is not ISO ("March 7", "1") and reads it as local time; this is
// the ISO shape only: a date, optionally a time, optionally a zone.
const ISO = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/

export type TimeArg = Result<{ ms: number }>

export function parseTimeArg(text: string, now: number): TimeArg {
  const s = text.trim()
  const span = SPAN.exec(s)
  if (span) return { ok: true, ms: now - Number(span[1]) * UNIT[span[2]!]! }
  if (/^\d{10,16}$/.test(s)) return { ok: true, ms: Number(s) }
  if (ISO.test(s)) {
    const ms = Date.parse(s)
    if (Number.isFinite(ms)) return { ok: true, ms }
  }
  return fail(
    'BAD_INPUT',
    `"${s.slice(0, 60)}" is not a time: give an ISO date or time (2026-11-25, 2026-11-25T14:00Z), ms since the epoch, or a span back from now (30m, 2h, 7d)`,
  )
}
