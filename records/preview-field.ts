// The `preview` listing field (market/API.md, "Listing fields"): how
// many of the data file's first lines the seller publishes as samples on the listing page.
// Shared, so the device refuses offline what the market would refuse.
import { type Failure, fail } from '../errors/codes.ts'

export const MAX_PREVIEW_LINES = 5

/** Absent or empty: 0. Else a whole number from 0 to MAX_PREVIEW_LINES, or the message naming the field. */
export function previewCount(raw: string | undefined): { ok: true; value: number } | Failure<'BAD_INPUT'> {
  if (raw === undefined || raw.trim() === '') return { ok: true, value: 0 }
  const s = raw.trim()
  if (!/^[0-9]{1,2}$/.test(s) || Number(s) > MAX_PREVIEW_LINES)
    return fail(
      'BAD_INPUT',
      `preview: must be a whole number of sample lines from 0 to ${MAX_PREVIEW_LINES} (got "${[...s].slice(0, 20).join('')}")`,
    )
  return { ok: true, value: Number(s) }
}
