// The stores of a hub that is not running, opened here for `svc hub backup` (the running hub
// hands out its own, route.ts). Read-only in effect: the engine store opens without retention.
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { Level } from 'level'
import { EngineStore } from '../engine/store.ts'
import { checkReadable } from '../stores/check.ts'
import { STORES } from './files.ts'
import type { ArchiveStore } from './archive.ts'
import { type StoreReaders, archiveStores } from './stores.ts'

export interface OpenStores {
  stores(history: boolean): ArchiveStore[]
  close(): Promise<void>
}

const locked = (err: unknown) => /lock/i.test(String((err as Error)?.message ?? err))

export async function openStoresForBackup(dataDir: string): Promise<OpenStores> {
  const closers: (() => Promise<void>)[] = []
  const close = async () => {
    for (const c of closers.reverse()) await c().catch(() => undefined)
  }
  const inUse = (name: string) =>
    new Error(
      `${join(dataDir, name)} is in use by another process (a hub whose local API did not answer?); stop it, or run svc hub backup against it once it answers`,
    )
  // Opening an older store would upgrade it without the copy the hub takes first.
  for (const name of STORES) await checkReadable(dataDir, name)
  try {
    let engine: EngineStore | null = null
    if (existsSync(join(dataDir, 'engine'))) {
      try {
        engine = await EngineStore.open(join(dataDir, 'engine'), { retention: false })
      } catch (err) {
        throw locked(err) ? inUse('engine') : err
      }
      const e = engine
      closers.push(() => e.close())
    }
    const levels: StoreReaders['levels'] = []
    for (const name of ['broker', 'attest'] as const) {
      if (!existsSync(join(dataDir, name))) continue
      const db = new Level<Buffer, Buffer>(join(dataDir, name), {
        keyEncoding: 'buffer',
        valueEncoding: 'buffer',
        createIfMissing: false,
      })
      try {
        await db.open()
      } catch (err) {
        throw locked(err) ? inUse(name) : err
      }
      closers.push(() => db.close())
      levels.push({ name, entries: () => db.iterator() })
    }
    const e = engine
    return {
      stores: (history) =>
        archiveStores({ ...(e ? { engine: (o) => e.exportRecords(o) } : {}), levels }, history),
      close,
    }
  } catch (err) {
    await close()
    throw err
  }
}
