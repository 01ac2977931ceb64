// Posts one built listing to the market (market/API.md, "POST /api/agent/listings") with the
// device's bearer key. The listing's id goes in `Idempotency-Key`, so a retry after a lost answer
// gets the first listing's 201 body back instead of a second listing (exactly once).
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { errorText } from '../../errors/text.ts'
import { MANIFEST_FILE } from './queue.ts'
import type { ListingEntry } from './record.ts'

export type PostOutcome =
  | { kind: 'posted'; slug: string; url: string }
  /** Try again later: offline, timeout, 5xx, 408, 429. */
  | { kind: 'retry'; error: string }
  /** The market refused this listing (4xx): retrying the same bytes cannot help. */
  | { kind: 'refused'; error: string }

export type Fetch = typeof fetch

export async function postListing(
  dir: string,
  entry: ListingEntry,
  key: string,
  opts: { fetch?: Fetch; timeoutMs?: number } = {},
): Promise<PostOutcome> {
  let form: FormData
  try {
    form = await formFor(dir, entry)
  } catch (err) {
    // A listing folder someone emptied by hand: no retry brings the files back.
    return { kind: 'refused', error: `listing files in ${dir}: ${errorText(err)}` }
  }
  const endpoint = new URL('/api/agent/listings', entry.market).href
  let res: Response
  try {
    res = await (opts.fetch ?? fetch)(endpoint, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'idempotency-key': entry.id },
      body: form,
      signal: AbortSignal.timeout(opts.timeoutMs ?? 60_000),
    })
  } catch (err) {
    const e = err as Error & { cause?: { code?: string } }
    return {
      kind: 'retry',
      error: `${endpoint}: ${e.cause?.code ?? (e.name === 'TimeoutError' ? 'timed out' : e.message)}`,
    }
  }
  const text = await res.text().catch(() => '')
  let body: Record<string, unknown> = {}
  try {
    body = JSON.parse(text) as Record<string, unknown>
  } catch {
    // not JSON: reported below by status
  }
  const error = typeof body.error === 'string' ? body.error : text.slice(0, 200)
  if (res.status === 201 && typeof body.slug === 'string' && typeof body.url === 'string') {
    // market/API.md, "POST /api/agent/listings": `url` is relative; the device puts the origin in front.
    return { kind: 'posted', slug: body.slug, url: new URL(body.url, entry.market).href }
  }
  if (res.status >= 500 || res.status === 408 || res.status === 429)
    return { kind: 'retry', error: `market answered ${res.status}: ${error}` }
  return { kind: 'refused', error: `market answered ${res.status}: ${error}` }
}

async function formFor(dir: string, entry: ListingEntry): Promise<FormData> {
  const form = new FormData()
  const f = entry.fields
  form.set('title', f.title)
  form.set('summary', f.summary)
  form.set('description', f.description)
  form.set('machineType', f.machineType)
  form.set('license', f.license)
  form.set('priceNative', f.priceNative)
  if (entry.preview) form.set('preview', String(entry.preview))
  form.set(
    'manifest',
    new Blob([await readFile(join(dir, MANIFEST_FILE))], { type: 'application/json' }),
    'manifest.json',
  )
  form.set(
    'data',
    new Blob([await readFile(join(dir, 'operations.jsonl'))], { type: 'application/x-ndjson' }),
    'operations.jsonl',
  )
  if (entry.image)
    form.set(
      'image',
      new Blob([await readFile(join(dir, entry.image.file))], { type: entry.image.type }),
      entry.image.file,
    )
  return form
}
