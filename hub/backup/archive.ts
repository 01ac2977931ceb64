// The backup archive (hub/backup/README.md, "The archive"): a gzip'd tar whose entries are the
// hub's small files (`home/…`, `data/…`, `sops/…`) and its stores' entries in parts
// (`stores/<name>/<n>.kv`, kv.ts), and last a manifest with every entry's size and SHA-256.
// Written and read as a stream: a backup never stages a copy of a store on disk.
import { createHash } from 'node:crypto'
import { readFile, stat } from 'node:fs/promises'
import { type Readable, type Writable, pipeline } from 'node:stream'
import { createGunzip, createGzip } from 'node:zlib'
import { extract, pack } from 'tar-stream'
import { errorText } from '../../errors/text.ts'
import { SVC_VERSION } from '../version.ts'
import { decodeKv, kvParts } from './kv.ts'

export const ARCHIVE_FORMAT = 'svc-hub-backup'
export const ARCHIVE_VERSION = 1
export const MANIFEST = 'manifest.json'

/** A file to keep: its path in the archive and where it is now. */
export interface ArchiveFile {
  path: string
  file: string
}

/** A store to keep: its entries, read from one consistent snapshot. */
export interface ArchiveStore {
  name: string
  /** The store's format version (hub/stores/README.md), which restore loads it as. */
  format: number
  entries(): AsyncIterable<readonly [Uint8Array, Uint8Array]>
}

export interface BackupSource {
  files: ArchiveFile[]
  stores: ArchiveStore[]
  /** false: finished runs and admission records were left out (`--no-history`). */
  history: boolean
}

export interface ManifestEntry {
  path: string
  bytes: number
  sha256: string
  mode: number
  /** A store's part: how many entries it holds. */
  entries?: number
}

export interface Manifest {
  format: typeof ARCHIVE_FORMAT
  version: number
  createdAt: string
  svc: string
  history: boolean
  stores: Record<string, { format: number; entries: number; parts: number }>
  files: ManifestEntry[]
}

export interface WriteProgress {
  /** The store being read, or null while files are written. */
  store: string | null
  entries: number
  /** Bytes of entries written so far (before compression). */
  bytes: number
}

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex')
const partName = (store: string, n: number) => `stores/${store}/${String(n).padStart(6, '0')}.kv`

/** Writes the archive of `src` to `out` (gzip'd); resolves to its manifest once all is written. */
export async function writeArchive(
  out: Writable,
  src: BackupSource,
  onProgress?: (p: WriteProgress) => void,
): Promise<Manifest> {
  const tar = pack()
  const done = new Promise<void>((resolve, reject) =>
    pipeline(tar, createGzip({ level: 6 }), out, (err) => (err ? reject(err) : resolve())),
  )
  // Its error also fails the next entry, which reports it; until then it is not unhandled.
  done.catch(() => undefined)
  const manifest: Manifest = {
    format: ARCHIVE_FORMAT,
    version: ARCHIVE_VERSION,
    createdAt: new Date().toISOString(),
    svc: SVC_VERSION,
    history: src.history,
    stores: {},
    files: [],
  }
  let bytes = 0
  const add = (path: string, data: Buffer, mode: number, entries?: number) =>
    new Promise<void>((resolve, reject) => {
      manifest.files.push({
        path,
        bytes: data.length,
        sha256: sha256(data),
        mode,
        ...(entries !== undefined ? { entries } : {}),
      })
      bytes += data.length
      tar.entry({ name: path, size: data.length, mode }, data, (err) => (err ? reject(err) : resolve()))
    })
  try {
    for (const f of src.files) {
      const s = await stat(f.file)
      await add(f.path, await readFile(f.file), s.mode & 0o777)
    }
    onProgress?.({ store: null, entries: 0, bytes })
    for (const store of src.stores) {
      const figures = { format: store.format, entries: 0, parts: 0 }
      manifest.stores[store.name] = figures
      for await (const part of kvParts(store.entries())) {
        await add(partName(store.name, ++figures.parts), part.bytes, 0o600, part.entries)
        figures.entries += part.entries
        onProgress?.({ store: store.name, entries: figures.entries, bytes })
      }
    }
    const text = Buffer.from(`${JSON.stringify(manifest, null, 1)}\n`)
    await new Promise<void>((resolve, reject) =>
      tar.entry({ name: MANIFEST, size: text.length, mode: 0o600 }, text, (err) =>
        err ? reject(err) : resolve(),
      ),
    )
    tar.finalize()
  } catch (err) {
    tar.destroy(err as Error)
    await done.catch(() => undefined)
    throw err
  }
  await done
  return manifest
}

/** Where a read archive's entries go: its files, and each store's entries part by part. */
export interface ArchiveSinks {
  file(path: string, data: Buffer, mode: number): Promise<void>
  entries(store: string, entries: Iterable<[Buffer, Buffer]>): Promise<void>
}

export class ArchiveError extends Error {}

/**
 * Reads a gzip'd archive from `input`, handing each entry to `sinks` as it comes, and checks it
 * against the manifest at its end: every entry there with its size and checksum, nothing more,
 * nothing less. Whatever the sinks wrote is only to be trusted once this resolves.
 */
export async function readArchive(input: Readable, sinks: ArchiveSinks): Promise<Manifest> {
  const ex = extract()
  const gunzip = createGunzip()
  const piped = new Promise<void>((resolve, reject) =>
    pipeline(input, gunzip, ex, (err) => (err ? reject(err) : resolve())),
  )
  // Its error also ends the loop below, which reports it; until then it is not unhandled.
  piped.catch(() => undefined)
  const seen = new Map<string, { bytes: number; sha256: string }>()
  let manifest: Manifest | null = null
  try {
    for await (const entry of ex) {
      const chunks: Buffer[] = []
      for await (const c of entry) chunks.push(c as Buffer)
      const data = Buffer.concat(chunks)
      const name = entry.header.name
      if (manifest) throw new ArchiveError(`${name}: an entry after the manifest`)
      if (name === MANIFEST) {
        manifest = parseManifest(data)
        continue
      }
      if (seen.has(name)) throw new ArchiveError(`${name}: twice in the archive`)
      seen.set(name, { bytes: data.length, sha256: sha256(data) })
      const part = /^stores\/([a-z0-9-]+)\/\d{6}\.kv$/.exec(name)
      if (part) await sinks.entries(part[1]!, decodeKv(data, name))
      else if (/^(home|data|sops)\/[^\0]+$/.test(name) && !name.split('/').includes('..'))
        await sinks.file(name, data, (entry.header.mode ?? 0o600) & 0o777)
      else throw new ArchiveError(`${name}: not an entry an svc backup has`)
    }
    await piped
  } catch (err) {
    input.destroy()
    await piped.catch(() => undefined)
    if (err instanceof ArchiveError) throw err
    throw new ArchiveError(`not a readable svc backup: ${errorText(err)}`)
  }
  if (!manifest) throw new ArchiveError('no manifest at the end: the archive is cut short')
  for (const f of manifest.files) {
    const s = seen.get(f.path)
    if (!s) throw new ArchiveError(`${f.path}: in the manifest, missing from the archive`)
    if (s.bytes !== f.bytes || s.sha256 !== f.sha256)
      throw new ArchiveError(`${f.path}: its checksum does not match the manifest (the archive is damaged)`)
    seen.delete(f.path)
  }
  const extra = [...seen.keys()]
  if (extra.length > 0) throw new ArchiveError(`${extra[0]}: in the archive, not in its manifest`)
  return manifest
}

function parseManifest(data: Buffer): Manifest {
  let m: Manifest
  try {
    m = JSON.parse(data.toString('utf8')) as Manifest
  } catch {
    throw new ArchiveError(`${MANIFEST}: not JSON`)
  }
  if (m?.format !== ARCHIVE_FORMAT) throw new ArchiveError(`${MANIFEST}: not an svc hub backup`)
  if (m.version > ARCHIVE_VERSION)
    throw new ArchiveError(
      `${MANIFEST}: archive version ${m.version} was written by a newer svc (this one reads up to ${ARCHIVE_VERSION})`,
    )
  if (!Array.isArray(m.files) || typeof m.stores !== 'object')
    throw new ArchiveError(`${MANIFEST}: files or stores missing`)
  return m
}
