// How each store is brought from an older format to the next (hub/stores/README.md, "Format
// versions and upgrades"). Each step is the store's own code doing what it does on open, run
// here before the hub opens the store, after a copy of it was taken.
import { migrateEngine } from './engine-format.ts'
import type { StoreName } from './format.ts'

export interface Upgrade {
  /** What it leaves, for the log line: counts of what the store holds afterwards. */
  run(dir: string, progress: (done: number, of: number) => void): Promise<string>
  /** How much it writes besides the store, as a multiple of the store's size (for the space check). */
  growth: number
}

/**
 * The engine's every step: its own open (store-open.ts `checkLayout`) brings a store of any older
 * format to the current one, and the step reports the runs it then holds.
 */
async function openEngine(dir: string, progress: (done: number, of: number) => void): Promise<string> {
  const r = await migrateEngine(dir, progress)
  return `${r.finished} finished and ${r.unfinished} unfinished runs`
}

/** By store, by the format an upgrade starts from. */
export const UPGRADES: Partial<Record<StoreName, Record<number, Upgrade>>> = {
  engine: {
    // Every run record written again through the history log (store.ts `migrate`).
    1: { growth: 1, run: openEngine },
    // Nothing moved: the run index is built again in its files if it was LevelDB's keys
    // (hub/engine/README.md, "The run index").
    2: { growth: 0.1, run: openEngine },
    // Nothing moved: only runs written after it may be located by the run index alone.
    3: { growth: 0, run: openEngine },
  },
}
