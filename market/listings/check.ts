// Every check of a listing upload, in the order the device would fix them: text fields, then
// the manifest, then the data against the manifest, then the image. Pure: returns the first
// problem, naming the field, or everything the route needs to pin and store.
import { type Failure, fail } from '../../errors/codes.ts'
import { type Manifest, checkManifest, checkManifestAgainstData } from '../../records/index.ts'
import { type ListingFields, checkListingFields, sniffImage } from '../../records/listing-fields.ts'
import { previewCount } from '../../records/preview-field.ts'
import { splitLines } from '../../records/index.ts'
import { type ListingPreview, buildPreview } from './preview.ts'
import type { Upload } from './upload.ts'

export interface CheckedListing {
  fields: ListingFields
  manifest: Manifest
  data: Buffer
  manifestBytes: Buffer
  image: { bytes: Buffer; type: string } | null
  preview: ListingPreview
}

/** Everything an upload carries is the device's input: every refusal is a 400 (market/API.md, "Statuses"). */
export type ListingCheck = { ok: true; value: CheckedListing } | Failure<'BAD_INPUT'>

const utf8 = new TextDecoder('utf-8', { fatal: true })

export function checkListingUpload(u: Upload, keyAgentId: string): ListingCheck {
  const f = checkListingFields(u.fields)
  if (!f.ok) return f
  const pc = previewCount(u.fields.preview)
  if (!pc.ok) return pc
  const manifestBytes = u.files.manifest
  if (!manifestBytes) return fail('BAD_INPUT', 'manifest: required (a JSON file)')
  const data = u.files.data
  if (!data) return fail('BAD_INPUT', 'data: required (a JSONL file)')

  let raw: unknown
  try {
    raw = JSON.parse(utf8.decode(manifestBytes))
  } catch {
    return fail('BAD_INPUT', 'manifest: not a valid UTF-8 JSON file')
  }
  const m = checkManifest(raw)
  if (!m.ok) return fail(m.code, `manifest ${m.error}`)
  if (m.value.agentId !== keyAgentId)
    return fail(
      'BAD_INPUT',
      `manifest agentId: ${m.value.agentId} does not match the key's agent ${keyAgentId}`,
    )
  if (m.value.rows.length === 0) return fail('BAD_INPUT', 'manifest rows: must hold at least one row')
  const seen = new Map<string, number>()
  for (let i = 0; i < m.value.rows.length; i++) {
    const h = m.value.rows[i]!.requestHash.toLowerCase()
    const first = seen.get(h)
    if (first !== undefined)
      return fail('BAD_INPUT', `manifest rows[${i}].requestHash: same as rows[${first}]`)
    seen.set(h, i)
  }

  let text: string
  try {
    text = utf8.decode(data)
  } catch {
    return fail('BAD_INPUT', 'data: not valid UTF-8')
  }
  const d = checkManifestAgainstData(m.value, text)
  if (!d.ok) return fail(d.code, d.fault === 'manifest' ? `manifest ${d.error}` : `data: ${d.error}`)

  let image: CheckedListing['image'] = null
  if (u.files.image) {
    const type = sniffImage(u.files.image)
    if (!type) return fail('BAD_INPUT', 'image: not a JPEG, PNG or WebP image (judged by its content)')
    image = { bytes: u.files.image, type }
  }
  const preview = buildPreview(splitLines(text), m.value.rows, pc.value)
  return { ok: true, value: { fields: f.value, manifest: m.value, data, manifestBytes, image, preview } }
}
