// Each of the hub's stores and the format version this svc writes (hub/stores/README.md, "Format
// versions and upgrades"). A store records its version where its own code cannot trip over it:
// the engine in its LevelDB key `meta!layout`, which its code already reads and writes (one
// marker, never two); the broker and the attestation store in a small `FORMAT` file in their
// folder, beside LevelDB's files (LevelDB leaves alone a file whose name is not one of its own).
// A store that records nothing is as the code before versions wrote it: see `recognise` per store.

export type StoreName = 'engine' | 'broker' | 'attest'

export interface StoreFormat {
  store: StoreName
  /** The version this svc writes, and the newest it reads. */
  current: number
  /** Where the version is recorded, as the messages name it. */
  recordedIn: 'meta!layout' | 'FORMAT'
}

export const FORMATS: Record<StoreName, StoreFormat> = {
  // 1: run records as JSON values in LevelDB (no `meta!layout`); 2: run records in the history
  // log, LevelDB an index of them (hub/engine/README.md, "The history log"); 3: the log's batches
  // may be followed by zeroes to their page's end, which the code of 2 would take for its end;
  // 4: a finished run may be located by the run index's files alone (hub/engine/README.md, "The
  // run index"), where the code of 3 would not look.
  engine: { store: 'engine', current: 4, recordedIn: 'meta!layout' },
  // 1: aedes-persistence-level's LevelDB as the hub has written it since the broker was embedded.
  broker: { store: 'broker', current: 1, recordedIn: 'FORMAT' },
  // 1: the attestation store's LevelDB (hub/attest/store.ts) as written since it exists.
  attest: { store: 'attest', current: 1, recordedIn: 'FORMAT' },
}

/**
 * A store's start cannot go on; the message is the one line the operator reads (`svc hub` prints
 * it after "could not start:"): the store, the file, and what to do.
 */
export class StoreRefused extends Error {
  constructor(
    readonly store: StoreName,
    message: string,
  ) {
    super(message)
    this.name = 'StoreRefused'
  }
}

/** The line for a store written by a newer svc. */
export function newerFormat(store: StoreName, where: string, found: number | string): StoreRefused {
  const current = FORMATS[store].current
  return new StoreRefused(
    store,
    `${where}: ${store} store format ${found} was written by a newer svc (this one reads up to ${current}); run that svc again, or restore a backup taken before the upgrade`,
  )
}
