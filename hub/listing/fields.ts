// The listing's text fields and image are checked on the device before anything is queued, with
// the market's own rules (market/API.md, "Listing fields"; records/listing-fields.ts), so a listing the
// market would refuse is refused here, offline, with the same message.
import { LIMITS, checkListingFields, sniffImage } from '../../records/listing-fields.ts'
import type { ListingText } from './record.ts'
import { fail, type Result } from '../../errors/codes.ts'

export type TextCheck = Result<{ value: ListingText }>

export function checkListingText(f: Partial<Record<keyof ListingText, string>>): TextCheck {
  const r = checkListingFields(f)
  if (!r.ok) return r
  const v = r.value
  return {
    ok: true,
    value: {
      title: v.title,
      summary: v.summary,
      description: v.description,
      machineType: v.machineType,
      license: v.license,
      priceNative: v.priceNative,
    },
  }
}

const EXT = { 'image/jpeg': '.jpg', 'image/png': '.png', 'image/webp': '.webp' } as const

export function checkImage(bytes: Uint8Array, name: string): Result<{ type: string; ext: string }> {
  if (bytes.length > LIMITS.imageBytes)
    return fail('TOO_LARGE', `--image ${name}: ${bytes.length} bytes, at most ${LIMITS.imageBytes}`)
  const type = sniffImage(bytes)
  if (!type) return fail('BAD_INPUT', `--image ${name}: not a JPEG, PNG or WebP file`)
  return { ok: true, type, ext: EXT[type] }
}
