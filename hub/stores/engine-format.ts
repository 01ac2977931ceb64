// The engine store's format as its own code records it, in LevelDB's `meta!layout`
// (hub/engine/store-layout.ts): read here with the database opened briefly, before EngineStore opens it,
// so that a newer store is refused and an older one backed up before anything is written.
import { readdir, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { EngineStore } from '../engine/store.ts'
import { FIN, LAYOUT, RUN } from '../engine/store-layout.ts'
import { FORMATS, newerFormat, type StoreRefused } from './format.ts'
import { type LevelDb, probeLevel } from './level-probe.ts'

/** What the engine's folder holds: no store yet, or a store of a format, with its runs counted for format 1. */
export type EngineFound = { fresh: true } | { fresh: false; format: number; runs: number | null }

// Format 1's run keys are today's (hub/engine/README.md, "A store from before the history log").

async function anyKey(db: LevelDb, prefix: string): Promise<boolean> {
  for await (const _ of db.keys({ gt: prefix, lt: `${prefix}\xff`, limit: 1 })) return true
  return false
}

/** Runs in a format-1 store: the ids of its run records and summaries. */
async function countRuns(db: LevelDb): Promise<number> {
  const ids = new Set<string>()
  for await (const k of db.keys({ gt: RUN, lt: `${RUN}\xff` }))
    ids.add(k.slice(RUN.length, k.lastIndexOf('!')))
  for await (const k of db.keys({ gt: FIN, lt: `${FIN}\xff` })) ids.add(k.slice(FIN.length))
  return ids.size
}

/** Whether the history log holds any bytes (a store of format 2 whose LevelDB has not caught up). */
async function logged(dir: string): Promise<boolean> {
  const names = await readdir(join(dir, 'history')).catch(() => [] as string[])
  for (const n of names) if (n.endsWith('.seg') && (await stat(join(dir, 'history', n))).size > 0) return true
  return false
}

/**
 * The engine store's format: `meta!layout` when set. Unset, the store is of format 1 if it holds
 * run keys and no history log, and a store with nothing yet otherwise: the engine writes its
 * marker with its first run, so a store that never ran one has none (and needs nothing).
 * Throws StoreRefused for a store that will not open or is newer than this svc reads.
 */
export async function inspectEngine(dir: string): Promise<EngineFound> {
  const where = `${dir} (${LAYOUT})`
  const found = await probeLevel('engine', dir, async (db): Promise<EngineFound | StoreRefused> => {
    const layout = await db.get(LAYOUT)
    if (layout !== undefined) {
      const n = Number(layout)
      if (!Number.isInteger(n) || n < 1 || n > FORMATS.engine.current)
        return newerFormat('engine', where, layout)
      return { fresh: false, format: n, runs: n === 1 ? await countRuns(db) : null }
    }
    if (await logged(dir)) return { fresh: false, format: FORMATS.engine.current, runs: null }
    if ((await anyKey(db, RUN)) || (await anyKey(db, FIN)))
      return { fresh: false, format: 1, runs: await countRuns(db) }
    return { fresh: true }
  })
  if (found === null)
    return (await logged(dir))
      ? { fresh: false, format: FORMATS.engine.current, runs: null }
      : { fresh: true }
  if (found instanceof Error) throw found
  return found
}

/**
 * Brings an older store to the current format: EngineStore's own open does it (from format 1,
 * `migrate`, which sets `meta!layout` last, so a crash part-way leaves format 1 and the next
 * start goes on; from format 2, the marker alone, and the run index's files built). No
 * retention runs here: the hub's open after it does. `onMigrate`: runs moved of how many, as
 * it goes. Resolves to the runs it then holds.
 */
export async function migrateEngine(
  dir: string,
  onMigrate?: (done: number, of: number) => void,
): Promise<{ finished: number; unfinished: number }> {
  const store = await EngineStore.open(dir, { retention: false, ...(onMigrate ? { onMigrate } : {}) })
  try {
    let finished = 0
    for await (const _ of store.finished()) finished++
    return { finished, unfinished: (await store.unfinished()).length }
  } finally {
    await store.close()
  }
}
