// LevelDB's own repair (RepairDB) on one of the hub's stores, and what it says it did. RepairDB
// reads every table and log file it finds, keeps what it can read, and writes a new MANIFEST;
// the files it replaced or could not read whole it moves into `<store>/lost/`, and it tells of
// each in the store's info log (`LOG`), which the next open replaces: so `LOG` is read right
// after the repair (hub/stores/README.md, "Repair").
import { readFile } from 'node:fs/promises'
import { basename, join } from 'node:path'
import { Level } from 'level'

/** What one repair did, as LevelDB's info log tells it. */
export interface LevelRepair {
  /** Files moved into `lost/` by this repair, by kind. */
  archived: { logs: string[]; manifests: string[]; tables: string[] }
  /** Records read from write-ahead logs and saved into tables. */
  logRecordsSaved: number
  /** Tables the repaired store is made of. */
  tables: number
  /** What LevelDB says it could not keep, one line each. */
  dropped: string[]
}

// A line of LevelDB's info log: `2026/01/02-03:04:05.678901 7f12ab… <message>`.
const PREFIX = /^\d{4}\/\d\d\/\d\d-\d\d:\d\d:\d\d\.\d+ [0-9a-fx]+ /

/**
 * Reads the lines RepairDB writes (leveldb db/repair.cc). A log whose tail was cut by a power
 * cut is read to its last whole record without a word (LevelDB takes that for a writer that
 * stopped), so a "dropping" line means bytes in the middle of a log could not be read. Pure.
 */
export function readRepairLog(text: string): LevelRepair {
  const out: LevelRepair = {
    archived: { logs: [], manifests: [], tables: [] },
    logRecordsSaved: 0,
    tables: 0,
    dropped: [],
  }
  const unparsable = new Map<string, number>()
  for (const raw of text.split('\n')) {
    const line = raw.replace(PREFIX, '').trim()
    let m: RegExpExecArray | null
    if ((m = /^Archiving (.+): OK$/.exec(line))) {
      const name = basename(m[1]!)
      if (name.endsWith('.log')) out.archived.logs.push(name)
      else if (name.startsWith('MANIFEST-')) out.archived.manifests.push(name)
      else out.archived.tables.push(name)
    } else if ((m = /^Log #(\d+): (\d+) ops saved to Table #\d+ (.*)$/.exec(line))) {
      out.logRecordsSaved += Number(m[2])
      if (m[3] !== 'OK') out.dropped.push(`write-ahead log ${m[1]}: its records could not be saved (${m[3]})`)
    } else if ((m = /^Log #(\d+): dropping (\d+) bytes; (.*)$/.exec(line))) {
      out.dropped.push(`write-ahead log ${m[1]}: ${m[2]} bytes could not be read (${m[3]})`)
    } else if ((m = /^Log #(\d+): ignoring (.*)$/.exec(line))) {
      out.dropped.push(`write-ahead log ${m[1]}: a batch was left out (${m[2]})`)
    } else if ((m = /^Table #(\d+): dropped: (.*)$/.exec(line))) {
      out.dropped.push(`table ${m[1]}: could not be read at all (${m[2]})`)
    } else if ((m = /^Table #(\d+): unparsable key/.exec(line))) {
      unparsable.set(m[1]!, (unparsable.get(m[1]!) ?? 0) + 1)
    } else if ((m = /^Table #(\d+): (\d+) entries (.*)$/.exec(line))) {
      if (m[3] !== 'OK')
        out.dropped.push(
          `table ${m[1]}: damaged (${m[3]}); the ${m[2]} entries before the damage were kept, any after it are lost`,
        )
    } else if ((m = /^\*\*\*\* Repaired leveldb .*; recovered (\d+) files;/.exec(line))) {
      out.tables = Number(m[1])
    }
  }
  for (const [table, n] of unparsable)
    out.dropped.push(`table ${table}: ${n} entries with unreadable keys left out`)
  return out
}

/** RepairDB on `path`; what it did. Only ever on a store no process has open (`levelState`). */
export async function repairLevel(path: string): Promise<LevelRepair> {
  // `level`'s Level is classic-level's ClassicLevel in Node, whose static `repair` runs RepairDB;
  // level's own types leave it out.
  await (Level as unknown as { repair(location: string): Promise<void> }).repair(path)
  const log = await readFile(join(path, 'LOG'), 'utf8').catch(() => '')
  return readRepairLog(log)
}

export type LevelState =
  | { kind: 'locked'; detail: string }
  | { kind: 'opens' }
  | { kind: 'fails'; detail: string }

/**
 * Whether a LevelDB opens, without creating one where there is none (a store whose CURRENT is
 * gone would otherwise be made a new, empty one). LevelDB takes its lock before it reads
 * anything, so a store another process holds says so however damaged it is.
 */
export async function levelState(path: string): Promise<LevelState> {
  const db = new Level(path, { createIfMissing: false })
  try {
    await db.open()
  } catch (err) {
    const e = err as Error & { cause?: Error & { code?: string } }
    const detail = e.cause?.message ?? e.message
    return e.cause?.code === 'LEVEL_LOCKED' ? { kind: 'locked', detail } : { kind: 'fails', detail }
  }
  await db.close()
  return { kind: 'opens' }
}

/** Every entry read, so a block that cannot be read shows; the count, or where reading stopped. */
export async function readAll(path: string): Promise<{ entries: number; error?: string }> {
  const db = new Level<Buffer, Buffer>(path, {
    createIfMissing: false,
    keyEncoding: 'buffer',
    valueEncoding: 'buffer',
  })
  let entries = 0
  try {
    await db.open()
    for await (const _ of db.iterator()) entries++
    return { entries }
  } catch (err) {
    const e = err as Error & { cause?: Error }
    return { entries, error: e.cause?.message ?? e.message }
  } finally {
    await db.close().catch(() => undefined)
  }
}
