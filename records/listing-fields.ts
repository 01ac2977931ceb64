// The text fields of a listing (market/API.md, "Listing fields" and
// "Limits"), shared by the market (which enforces them) and the hub (which checks a listing before
// it posts one). Pure. Lengths count Unicode code points, so "é" or an emoji is one character.
import { parseEther } from 'viem'
import { type Failure, fail } from '../errors/codes.ts'

export type MachineType = 'vending' | 'arm' | 'drone' | 'amr' | 'sensor' | 'humanoid' | 'other'
export type License = 'research' | 'commercial' | 'audit'

export const MACHINE_TYPES: readonly MachineType[] = [
  'vending',
  'arm',
  'drone',
  'amr',
  'sensor',
  'humanoid',
  'other',
]
export const LICENSES: readonly License[] = ['research', 'commercial', 'audit']
export const LIMITS = {
  titleMax: 80,
  summaryMax: 180,
  descriptionMin: 20,
  descriptionMax: 8000,
  /** 20 MB = 20 MiB (20,971,520 bytes) for the manifest and for the data file. */
  fileBytes: 20 * 1024 * 1024,
  /** The cover image: 5 MiB (market/API.md, "Limits"). */
  imageBytes: 5 * 1024 * 1024,
} as const

export interface ListingFields {
  title: string
  summary: string
  description: string
  machineType: MachineType
  license: License
  /** The price as the device sent it, in native units (e.g. "0.05"). */
  priceNative: string
  priceWei: bigint
}

/** The fields are the seller's input: every refusal is BAD_INPUT, naming the field. */
export type FieldsResult = { ok: true; value: ListingFields } | Failure<'BAD_INPUT'>

const LINE_BREAK = /[\r\n\u2028\u2029\u0085\v\f]/
const chars = (s: string): number => [...s].length
// A plain decimal: digits, optional fraction of at most 18 digits (wei), no sign or exponent.
const DECIMAL = /^(0|[1-9][0-9]{0,29})(\.[0-9]{1,18})?$/

export function checkListingFields(f: Record<string, string | undefined>): FieldsResult {
  const need = (name: string): string | Failure<'BAD_INPUT'> =>
    f[name] ?? fail('BAD_INPUT', `${name}: required`)
  const title = need('title')
  if (typeof title !== 'string') return title
  if (title.trim().length === 0) return fail('BAD_INPUT', 'title: must not be empty')
  if (chars(title) > LIMITS.titleMax)
    return fail('BAD_INPUT', `title: at most ${LIMITS.titleMax} characters (got ${chars(title)})`)
  if (LINE_BREAK.test(title)) return fail('BAD_INPUT', 'title: must not contain line breaks')

  const summary = need('summary')
  if (typeof summary !== 'string') return summary
  if (summary.trim().length === 0) return fail('BAD_INPUT', 'summary: must not be empty')
  if (chars(summary) > LIMITS.summaryMax)
    return fail('BAD_INPUT', `summary: at most ${LIMITS.summaryMax} characters (got ${chars(summary)})`)
  if (LINE_BREAK.test(summary)) return fail('BAD_INPUT', 'summary: must not contain line breaks')

  const description = need('description')
  if (typeof description !== 'string') return description
  const dl = chars(description)
  if (dl < LIMITS.descriptionMin || dl > LIMITS.descriptionMax)
    return fail(
      'BAD_INPUT',
      `description: ${LIMITS.descriptionMin} to ${LIMITS.descriptionMax} characters (got ${dl})`,
    )

  const machineType = need('machineType')
  if (typeof machineType !== 'string') return machineType
  if (!(MACHINE_TYPES as readonly string[]).includes(machineType))
    return fail(
      'BAD_INPUT',
      `machineType: must be one of ${MACHINE_TYPES.join(', ')} (got "${machineType.slice(0, 40)}")`,
    )

  const license = need('license')
  if (typeof license !== 'string') return license
  if (!(LICENSES as readonly string[]).includes(license))
    return fail('BAD_INPUT', `license: must be one of ${LICENSES.join(', ')} (got "${license.slice(0, 40)}")`)

  const price = need('priceNative')
  if (typeof price !== 'string') return price
  const p = price.trim()
  if (!DECIMAL.test(p))
    return fail(
      'BAD_INPUT',
      `priceNative: must be a decimal number with at most 18 decimals, like 0.05 (got "${price.slice(0, 40)}")`,
    )
  const priceWei = parseEther(p)
  if (priceWei <= 0n) return fail('BAD_INPUT', 'priceNative: must be greater than zero')

  return {
    ok: true,
    value: {
      title,
      summary,
      description,
      machineType: machineType as MachineType,
      license: license as License,
      priceNative: p,
      priceWei,
    },
  }
}

/** JPEG, PNG or WebP, judged by the first bytes, never by the declared type or file name. */
export function sniffImage(b: Uint8Array): 'image/jpeg' | 'image/png' | 'image/webp' | null {
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'image/jpeg'
  if (b.length >= 8 && [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a].every((v, i) => b[i] === v))
    return 'image/png'
  if (b.length >= 12 && ascii(b, 0, 4) === 'RIFF' && ascii(b, 8, 12) === 'WEBP') return 'image/webp'
  return null
}
const ascii = (b: Uint8Array, s: number, e: number): string => String.fromCharCode(...b.subarray(s, e))
