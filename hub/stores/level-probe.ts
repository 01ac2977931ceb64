// Whether a store's LevelDB will open, tried before the hub opens it for good, so that a store
// that will not stops the start with one line (hub/stores/README.md, "Format versions and
// upgrades") instead of a stack from deep inside the part that opened it.
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { Level } from 'level'
import { errorText } from '../../errors/text.ts'
import { type StoreName, StoreRefused } from './format.ts'

/** LevelDB's own files (leveldb db/filename.cc): a folder holding any has been a database. */
const LEVEL_FILE = /^(MANIFEST-\d+|\d+\.(log|ldb|sst))$/

export type LevelDb = Level<string, string>

/** Whether `dir` holds any of LevelDB's files (false for a folder not made yet). */
export async function holdsDatabase(dir: string): Promise<boolean> {
  const names = await readdir(dir).catch(() => [] as string[])
  return names.some((n) => n === 'CURRENT' || LEVEL_FILE.test(n))
}

const REPAIR = 'stop the hub and run `svc hub repair`'

/**
 * Opens the LevelDB in `dir` (never creating one), hands it to `read`, closes it. Resolves to
 * null when the folder holds no database yet. A store that will not open is a StoreRefused whose
 * line names the store, the file LevelDB named, and the fix.
 */
export async function probeLevel<T>(
  store: StoreName,
  dir: string,
  read: (db: LevelDb) => Promise<T>,
): Promise<T | null> {
  let names: string[]
  try {
    names = await readdir(dir)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw new StoreRefused(store, `${dir}: cannot be read (${errorText(err)}); check its permissions`)
  }
  if (!names.includes('CURRENT')) {
    const own = names.filter((n) => LEVEL_FILE.test(n))
    if (own.length === 0) return null
    // LevelDB would take the folder for an empty one and start a new database over the old files.
    throw new StoreRefused(
      store,
      `${join(dir, 'CURRENT')}: missing, though the ${store} store holds ${own.sort().slice(0, 3).join(', ')}${own.length > 3 ? ', …' : ''} (opened as it is, it would start empty); ${REPAIR}`,
    )
  }
  const db: LevelDb = new Level<string, string>(dir, { createIfMissing: false, valueEncoding: 'utf8' })
  try {
    await db.open()
  } catch (err) {
    throw openRefusal(store, dir, err)
  }
  try {
    return await read(db)
  } finally {
    await db.close()
  }
}

/** The one line for a LevelDB that would not open. */
export function openRefusal(store: StoreName, dir: string, err: unknown): StoreRefused {
  const cause = (err as { cause?: { code?: unknown; message?: unknown } }).cause
  const text = cause?.message != null ? String(cause.message) : errorText(err)
  if (cause?.code === 'LEVEL_LOCKED')
    return new StoreRefused(
      store,
      `${join(dir, 'LOCK')}: held by another process (${text}): another svc hub is running on this data dir; stop it, or give this one its own data_dir`,
    )
  // LevelDB's message names the file it could not read (`Corruption: …/000005.ldb …`), or says
  // what of CURRENT was wrong; it is one line.
  return new StoreRefused(
    store,
    `${dir}: the ${store} store will not open (${text.replace(/\s+/g, ' ')}); ${REPAIR}`,
  )
}
