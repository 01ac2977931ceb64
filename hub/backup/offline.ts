// The stores of a hub that is not running, opened here for `svc hub backup` (the running hub
// hands out its own, route.ts). Read-only in effect: the engine store opens without retention.
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { Level } from 'level'
import { EngineStore } from '../engine/store.ts'
import { checkReadable } from '../stores/check.ts'
import { openRefusal } from '../stores/level-probe.ts'
import { STORES } from './files.ts'
import type { ArchiveStore } from './archive.ts'
import { type StoreReaders, archiveStores } from './stores.ts'

export interface OpenStores {
  stores(history: boolean): ArchiveStore[]
  close(): Promise<void>
}

export async function openStoresForBackup(dataDir: string): Promise<OpenStores> {
  const closers: (() => Promise<void>)[] = []
  const close = async () => {
    for (const c of closers.reverse()) await c().catch(() => undefined)
  }
  // Opening an older store would upgrade it without the copy the hub takes first; one held by a
  // hub, or damaged, is refused with the start's own line (hub/stores/level-probe.ts).
  for (const name of STORES) await checkReadable(dataDir, name)
  try {
    let engine: EngineStore | null = null
    if (existsSync(join(dataDir, 'engine'))) {
      try {
        engine = await EngineStore.open(join(dataDir, 'engine'), { retention: false })
      } catch (err) {
        throw openRefusal('engine', join(dataDir, 'engine'), err)
      }
      const opened = engine
      closers.push(() => opened.close())
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
        throw openRefusal(name, join(dataDir, name), err)
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
