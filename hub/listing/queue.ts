// The device's listing queue: one folder per listing under `<SVC_HOME>/listings/`, holding
// listing.json (the entry), operations.jsonl, operation-requests.txt, manifest.json and the cover
// image. Plain files, so `svc listing status` and `svc listing sync` work while the hub runs (the
// hub holds the attestation store's LevelDB lock, not these). listing.json is written atomically
// (hub/files/README.md: Small files): a power cut leaves the old entry or the new one.
import { randomBytes } from 'node:crypto'
import { mkdir, readFile, readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { errorText } from '../../errors/text.ts'
import { writeFileAtomic } from '../../files/atomic-file.ts'
import type { ListingEntry } from './record.ts'

export const ENTRY_FILE = 'listing.json'
export const MANIFEST_FILE = 'manifest.json'

export function listingsDir(home: string): string {
  return join(home, 'listings')
}

/** Sortable by creation time, unique, safe as a folder name and an Idempotency-Key. */
export function newListingId(now: Date = new Date()): string {
  const t = now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z')
  return `${t}-${randomBytes(6).toString('hex')}`
}

export async function saveEntry(dir: string, entry: ListingEntry): Promise<void> {
  await mkdir(dir, { recursive: true })
  await writeFileAtomic(join(dir, ENTRY_FILE), JSON.stringify(entry, null, 2) + '\n')
}

/** A folder whose listing.json cannot be read as an entry is IO_FAILED (a half-written or damaged folder). */
export type LoadedEntry =
  | { ok: true; dir: string; entry: ListingEntry }
  | { ok: false; code: 'IO_FAILED'; dir: string; error: string }

export async function loadEntry(dir: string): Promise<LoadedEntry> {
  try {
    const e = JSON.parse(await readFile(join(dir, ENTRY_FILE), 'utf8')) as ListingEntry
    if (e.version !== 1 || typeof e.id !== 'string' || typeof e.state !== 'string')
      return { ok: false, code: 'IO_FAILED', dir, error: `${join(dir, ENTRY_FILE)}: not a listing entry` }
    return { ok: true, dir, entry: e }
  } catch (err) {
    return { ok: false, code: 'IO_FAILED', dir, error: `${join(dir, ENTRY_FILE)}: ${errorText(err)}` }
  }
}

/** Every listing, oldest first. Folders that are not listings (or half-written) are reported, not thrown. */
export async function loadAll(home: string): Promise<LoadedEntry[]> {
  const root = listingsDir(home)
  let names: string[]
  try {
    names = (await readdir(root, { withFileTypes: true })).filter((d) => d.isDirectory()).map((d) => d.name)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return []
    throw err
  }
  names.sort()
  return Promise.all(names.map((n) => loadEntry(join(root, n))))
}
