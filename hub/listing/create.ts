// `svc listing create`: checks the fields, copies the image, builds and checks the files from the
// attestation store, and queues the listing. A refusal removes what was started: nothing changes.
// When the store is held by the running hub, the listing is queued as a draft that the hub
// builds (with the same checks) at its next sync pass.
import { mkdir, readFile, rm } from 'node:fs/promises'
import { basename, join } from 'node:path'
import { fail, failAt, type Result } from '../../errors/codes.ts'
import { errorText } from '../../errors/text.ts'
import type { AttestStore } from '../attest/store.ts'
import { writeFileAtomic } from '../../files/atomic-file.ts'
import { previewCount } from '../../records/preview-field.ts'
import { buildListingFiles } from './build.ts'
import { checkImage, checkListingText } from './fields.ts'
import { listingsDir, newListingId, saveEntry } from './queue.ts'
import type { ListingEntry, ListingRange, ListingText } from './record.ts'

export interface CreateInput {
  home: string
  fields: Partial<Record<keyof ListingText, string>>
  range: ListingRange
  market: string
  imagePath?: string
  /** Sample lines to publish (the first N), 0 to MAX_PREVIEW_LINES; default 0. */
  preview?: number
  /** null: the store is busy (the hub holds it): queue a draft for the hub to build. */
  store: AttestStore | null
  /** Needed to build now; a draft is built by the hub for its own agent. */
  agentId: string | null
  now?: Date
}

export type CreateResult = Result<{ entry: ListingEntry; dir: string }>

export async function createListing(i: CreateInput): Promise<CreateResult> {
  const text = checkListingText(i.fields)
  if (!text.ok) return text
  const preview = previewCount(i.preview === undefined ? undefined : String(i.preview))
  if (!preview.ok) return failAt('--', preview)
  let image: { bytes: Uint8Array; type: string; ext: string } | null = null
  if (i.imagePath !== undefined) {
    let bytes: Uint8Array
    try {
      bytes = await readFile(i.imagePath)
    } catch (err) {
      const missing = (err as NodeJS.ErrnoException).code === 'ENOENT'
      return fail(
        missing ? 'NOT_FOUND' : 'IO_FAILED',
        `--image ${i.imagePath}: ${missing ? 'no such file' : errorText(err)}`,
      )
    }
    const c = checkImage(bytes, basename(i.imagePath))
    if (!c.ok) return c
    image = { bytes, type: c.type, ext: c.ext }
  }
  const id = newListingId(i.now)
  const dir = join(listingsDir(i.home), id)
  let entry: ListingEntry = {
    version: 1,
    id,
    createdAt: (i.now ?? new Date()).toISOString(),
    state: 'draft',
    fields: text.value,
    range: i.range,
    market: i.market,
    image: image ? { file: `image${image.ext}`, type: image.type } : null,
    rows: null,
    ...(preview.value > 0 ? { preview: preview.value } : {}),
    attempts: 0,
    lastError: null,
    nextAttemptAt: null,
    slug: null,
    url: null,
    postedAt: null,
  }
  try {
    // The folder becomes a draft only once listing.json is written (last), so a crash before
    // that leaves a folder that the sync reports and skips, never a half listing.
    if (image) {
      await mkdir(dir, { recursive: true })
      await writeFileAtomic(join(dir, entry.image!.file), image.bytes)
    }
    if (i.store) {
      if (i.agentId === null) throw new Error('an agent id is needed to build a listing')
      const b = await buildListingFiles(i.store, dir, i.range, i.agentId)
      if (!b.ok) {
        await rm(dir, { recursive: true, force: true })
        return b
      }
      entry = { ...entry, state: 'queued', rows: b.rows }
    }
    await saveEntry(dir, entry)
    return { ok: true, entry, dir }
  } catch (err) {
    await rm(dir, { recursive: true, force: true })
    throw err
  }
}
