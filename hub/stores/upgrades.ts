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

/** By store, by the format an upgrade starts from. */
export const UPGRADES: Partial<Record<StoreName, Record<number, Upgrade>>> = {
  engine: {
    // Every run record written again through the history log (store.ts `migrate`).
    1: {
      growth: 1,
      async run(dir, progress) {
        const r = await migrateEngine(dir, progress)
        return `${r.finished} finished and ${r.unfinished} unfinished runs`
      },
    },
    // Nothing moved: the open records the current format (store-open.ts `checkLayout`); the run
    // index is built again in its files if it was LevelDB's keys (hub/engine/README.md, "The run
    // index").
    2: {
      growth: 0.1,
      async run(dir, progress) {
        const r = await migrateEngine(dir, progress)
        return `${r.finished} finished and ${r.unfinished} unfinished runs`
      },
    },
    // Nothing moved: the open records format 4 (store-open.ts `checkLayout`); only runs written
    // after it may be located by the run index alone.
    3: {
      growth: 0,
      async run(dir, progress) {
        const r = await migrateEngine(dir, progress)
        return `${r.finished} finished and ${r.unfinished} unfinished runs`
      },
    },
  },
}
