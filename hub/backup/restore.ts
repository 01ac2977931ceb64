// Restoring an archive into an empty home (hub/backup/README.md, "Restore"): every entry goes
// into a staging folder inside the home first (files as they were, each store's entries into a
// fresh LevelDB), the archive is checked against its manifest, the engine's records are moved
// into a history log of their own (the store's own migration), and only then is each part
// moved into place. A failure leaves the home as it was.
import { createReadStream } from 'node:fs'
import { cp, mkdir, open, readdir, rename, rm } from 'node:fs/promises'
import { join } from 'node:path'
import type { Readable } from 'node:stream'
import { Level } from 'level'
import { EngineStore } from '../engine/store.ts'
import { archivedRun } from '../engine/store-layout.ts'
import { isLineKey } from '../attest/store.ts'
import { writeFileAtomic } from '../../files/atomic-file.ts'
import { FORMATS, type StoreName } from '../stores/format.ts'
import { ENGINE_ARCHIVE_FORMAT } from './stores.ts'
import { type Manifest, readArchive } from './archive.ts'
import { GZIP_MAGIC, HEAD_BYTES, MAGIC, decryptStream } from './crypt.ts'

export interface RestorePlaces {
  home: string
  dataDir: string
  sopsDir: string
}

export interface RestoreResult {
  manifest: Manifest
  files: number
  /** Entries loaded per store. */
  entries: Record<string, number>
  runs: { finished: number; unfinished: number }
  lines: number
}

export class RestoreError extends Error {}

/** The archive's bytes, decrypted when it was encrypted (the first bytes tell which). */
async function archiveInput(file: string, passphrase: string | null): Promise<Readable> {
  const fh = await open(file, 'r')
  const head = Buffer.alloc(HEAD_BYTES)
  const { bytesRead } = await fh.read(head, 0, HEAD_BYTES, 0)
  await fh.close()
  const encrypted = bytesRead >= MAGIC.length && head.subarray(0, MAGIC.length).equals(MAGIC)
  if (encrypted) {
    if (passphrase === null)
      throw new RestoreError(`${file} is encrypted: give its passphrase with --passphrase-env VAR`)
    if (bytesRead < HEAD_BYTES) throw new RestoreError(`${file}: cut short`)
    const dec = await decryptStream(passphrase, head)
    return createReadStream(file, { start: HEAD_BYTES }).pipe(dec)
  }
  if (!head.subarray(0, 2).equals(GZIP_MAGIC)) throw new RestoreError(`${file}: not an svc hub backup`)
  return createReadStream(file)
}

/** Moves everything in `from` into `to` (made if missing), across filesystems if need be. */
async function moveInto(from: string, to: string): Promise<void> {
  let names: string[]
  try {
    names = await readdir(from)
  } catch {
    return
  }
  await mkdir(to, { recursive: true, mode: 0o700 })
  for (const n of names) {
    try {
      await rename(join(from, n), join(to, n))
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EXDEV') throw err
      await cp(join(from, n), join(to, n), { recursive: true, preserveTimestamps: true })
    }
  }
}

export async function restoreArchive(
  file: string,
  places: RestorePlaces,
  passphrase: string | null,
  onProgress?: (store: string, entries: number) => void,
): Promise<RestoreResult> {
  const stage = join(places.home, `.restore-${process.pid}`)
  await rm(stage, { recursive: true, force: true })
  await mkdir(stage, { recursive: true, mode: 0o700 })
  const dbs = new Map<string, Level<Buffer, Buffer>>()
  const entries: Record<string, number> = {}
  const runs = { finished: 0, unfinished: 0 }
  let lines = 0
  let files = 0
  try {
    const input = await archiveInput(file, passphrase)
    const manifest = await readArchive(input, {
      async file(path, data, mode) {
        // Never more open than it was; never writable by others.
        await writeFileAtomic(join(stage, path), data, { mode: mode & 0o755, dirMode: 0o700 })
        files++
      },
      async entries(store, list) {
        let db = dbs.get(store)
        if (!db) {
          db = new Level<Buffer, Buffer>(join(stage, 'stores', store), {
            keyEncoding: 'buffer',
            valueEncoding: 'buffer',
          })
          await mkdir(join(stage, 'stores'), { recursive: true })
          await db.open()
          dbs.set(store, db)
        }
        const batch = db.batch()
        let n = 0
        for (const [k, v] of list) {
          batch.put(k, v)
          n++
          if (store === 'engine') {
            const run = archivedRun(k)
            if (run) runs[run]++
          } else if (store === 'attest' && isLineKey(k)) lines++
        }
        await batch.write()
        entries[store] = (entries[store] ?? 0) + n
        onProgress?.(store, entries[store]!)
      },
    })
    for (const db of dbs.values()) await db.close()
    dbs.clear()
    for (const [name, f] of Object.entries(manifest.stores)) {
      const known = name === 'engine' ? ENGINE_ARCHIVE_FORMAT : FORMATS[name as StoreName]?.current
      if (known === undefined)
        throw new RestoreError(`the archive holds a store this svc does not know: ${name}`)
      if (f.format > known)
        throw new RestoreError(
          `the archive's ${name} store is format ${f.format}, written by a newer svc (this one reads up to ${known}); restore it with that version`,
        )
    }
    // The engine's records, as its first layout held them, move into a history log (store-open.ts).
    if (manifest.stores.engine) {
      const engine = await EngineStore.open(join(stage, 'stores', 'engine'), { retention: false })
      await engine.close()
    }
    await moveInto(join(stage, 'home'), places.home)
    await moveInto(join(stage, 'data'), places.dataDir)
    await moveInto(join(stage, 'stores'), places.dataDir)
    await moveInto(join(stage, 'sops'), places.sopsDir)
    return { manifest, files, entries, runs, lines }
  } finally {
    for (const db of dbs.values()) await db.close().catch(() => undefined)
    await rm(stage, { recursive: true, force: true })
  }
}
