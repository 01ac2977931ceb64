// The disk as GET /metrics reports it: bytes of each store under the data folder, the free space
// of the data folder's filesystem, and what the process has written (/proc/self/io). Every call
// here is one file-system request after the other, never many at once: they share libuv's four
// threads with LevelDB's reads and writes, and a scrape must not take them all from the event path.
import { lstat, readdir, readFile, statfs } from 'node:fs/promises'
import { join } from 'node:path'

/** At most this many stores (folders of the data folder) are reported, in name order. */
export const MAX_STORES = 32

export interface StoreSize {
  store: string
  bytes: number
}

async function folderBytes(dir: string): Promise<number> {
  let total = 0
  let entries
  try {
    entries = await readdir(dir, { withFileTypes: true })
  } catch {
    return 0 // gone since it was listed
  }
  for (const e of entries) {
    const p = join(dir, e.name)
    if (e.isDirectory()) total += await folderBytes(p)
    else if (e.isFile()) {
      try {
        total += (await lstat(p)).size
      } catch {
        // removed meanwhile (a LevelDB compaction): it no longer takes space
      }
    }
  }
  return total
}

/** Bytes on disk of each folder directly under `dataDir` (broker, engine, attest, …). */
export async function storeSizes(dataDir: string): Promise<StoreSize[]> {
  let entries
  try {
    entries = await readdir(dataDir, { withFileTypes: true })
  } catch {
    return []
  }
  const dirs = entries
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort()
    .slice(0, MAX_STORES)
  const out: StoreSize[] = []
  for (const store of dirs) out.push({ store, bytes: await folderBytes(join(dataDir, store)) })
  return out
}

export interface FilesystemSpace {
  /** Bytes an unprivileged process may still write. */
  availBytes: number
  sizeBytes: number
}

export async function filesystemSpace(dir: string): Promise<FilesystemSpace | null> {
  try {
    const s = await statfs(dir)
    return { availBytes: s.bavail * s.bsize, sizeBytes: s.blocks * s.bsize }
  } catch {
    return null
  }
}

export interface ProcessIo {
  /** Bytes this process caused to be read from and written to storage (not the page cache). */
  readBytes: number
  writeBytes: number
}

/** `read_bytes` and `write_bytes` of a /proc/<pid>/io text; null when either is missing. */
export function parseProcIo(text: string): ProcessIo | null {
  const field = (name: string): number | null => {
    const m = new RegExp(`^${name}:\\s*(\\d+)\\s*$`, 'm').exec(text)
    return m ? Number(m[1]) : null
  }
  const readBytes = field('read_bytes')
  const writeBytes = field('write_bytes')
  return readBytes === null || writeBytes === null ? null : { readBytes, writeBytes }
}

/** Linux only; null elsewhere, or where the kernel keeps the file from the process. */
export async function processIo(file = '/proc/self/io'): Promise<ProcessIo | null> {
  try {
    return parseProcIo(await readFile(file, 'utf8'))
  } catch {
    return null
  }
}
