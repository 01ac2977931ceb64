// The stores an archive keeps, the same whether the running hub hands them out (route.ts) or
// `svc hub backup` opens them itself (offline.ts).
import { FORMATS } from '../stores/format.ts'
import type { ArchiveStore } from './archive.ts'
import { utf8Entries } from './kv.ts'

export interface StoreReaders {
  /** The engine's records (EngineStore.exportRecords); absent: no engine store. */
  engine?: (o: { history: boolean }) => AsyncIterable<[string, string]>
  /** LevelDB stores kept entry for entry (the broker's, the attestation store), by name. */
  levels: { name: 'broker' | 'attest'; entries(): AsyncIterable<readonly [Uint8Array, Uint8Array]> }[]
}

/**
 * The engine's records go as its first layout held them (a key and its JSON value), whatever
 * layout it has now: a restore loads them and the store's own migration moves them into a log
 * (hub/engine/README.md, "A store from before the history log"). The LevelDB stores go as they are.
 */
export const ENGINE_ARCHIVE_FORMAT = 1

export function archiveStores(r: StoreReaders, history: boolean): ArchiveStore[] {
  const engine = r.engine
  return [
    ...(engine
      ? [{ name: 'engine', format: ENGINE_ARCHIVE_FORMAT, entries: () => utf8Entries(engine({ history })) }]
      : []),
    ...r.levels.map((l) => ({ name: l.name, format: FORMATS[l.name].current, entries: () => l.entries() })),
  ]
}
