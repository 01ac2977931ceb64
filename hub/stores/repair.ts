// `svc hub repair`'s work on the hub's stores (hub/stores/README.md, "Repair"): for each store
// present, LevelDB's repair, then the store opened through the code the hub opens it with; for the
// engine also its LevelDB applied again from the whole history log and the run index rebuilt
// from it. Each store's report says what was done and what could not be recovered. Never run on
// a store another process holds: RepairDB takes no lock of its own.
import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { Level } from 'level'
import { HUB_LEVELDB_SIZES } from '../leveldb.ts'
import { type HistoryScan, scanHistory } from './history-scan.ts'
import { type LevelRepair, levelState, readAll, repairLevel } from './leveldb-repair.ts'

export const STORE_NAMES = ['engine', 'broker', 'attest'] as const
export type StoreName = (typeof STORE_NAMES)[number]

export interface StoreReport {
  store: StoreName
  path: string
  present: boolean
  /** Whether it opened before the repair, and LevelDB's word when it did not. */
  before?: { opens: boolean; error?: string }
  /** What was done, one line each. */
  done: string[]
  /** What could not be recovered, one line each; empty: nothing was lost. */
  lost: string[]
  /** Whether the store opens after the repair (through the hub's own code). */
  opens: boolean
  error?: string
  leveldb?: LevelRepair
  history?: { segments: number; batches: number; unreadableBytes: number; tornBytesCut: number }
  runs?: { indexed: number; unfinished: number; keptTriggers: number }
  entries?: number
}

/** A hub (or another process) holds a store: nothing was changed. */
export class RepairRefused extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'RepairRefused'
  }
}

export interface RepairOptions {
  dataDir: string
  stores?: readonly StoreName[]
  /** The engine's history segment size (hub.toml `[history] segment_mb`), for a write the rebuild makes. */
  segmentBytes?: number
  /** Told of long work as it goes (a rebuild of the index: segments read of how many). */
  onProgress?: (line: string) => void
}

const LEVEL_FILE = /^(CURRENT|MANIFEST-\d+|\d+\.(log|ldb|sst))$/
const hasLevelFiles = (path: string): boolean =>
  existsSync(path) && readdirSync(path).some((f) => LEVEL_FILE.test(f))
const hasSegments = (path: string): boolean =>
  existsSync(join(path, 'history')) && readdirSync(join(path, 'history')).some((f) => f.endsWith('.seg'))

function present(store: StoreName, path: string): boolean {
  return hasLevelFiles(path) || (store === 'engine' && hasSegments(path))
}

const STOP_HUB =
  'stop it first (`systemctl stop svc-hub` for the service, or Ctrl-C where `svc hub` runs), then run `svc hub repair` again'

/**
 * Repairs each store of `dataDir` that is there. Refuses, changing nothing, when any of them is
 * held by another process (a running hub).
 */
export async function repairStores(o: RepairOptions): Promise<StoreReport[]> {
  const names = o.stores ?? STORE_NAMES
  const reports: StoreReport[] = names.map((store) => {
    const path = join(o.dataDir, store)
    return { store, path, present: present(store, path), done: [], lost: [], opens: false }
  })
  for (const r of reports) {
    if (!r.present || !hasLevelFiles(r.path)) continue
    const s = await levelState(r.path)
    if (s.kind === 'locked')
      throw new RepairRefused(
        `the ${r.store} store (${r.path}) is open in another process, a hub running on this data folder (${s.detail}); ${STOP_HUB}`,
      )
    r.before = s.kind === 'opens' ? { opens: true } : { opens: false, error: s.detail }
  }
  for (const r of reports) {
    if (!r.present) continue
    try {
      if (r.store === 'engine') await repairEngine(r, o)
      else {
        await repairLevelStore(r)
        await (r.store === 'broker' ? checkBroker(r) : checkAttest(r))
      }
    } catch (err) {
      r.opens = false
      const e = err as Error & { cause?: Error }
      r.error = e.cause?.message ? `${e.message}: ${e.cause.message}` : e.message
    }
  }
  return reports
}

/** LevelDB's repair, its account in the report. */
async function repairLevelStore(r: StoreReport): Promise<void> {
  const l = await repairLevel(r.path)
  r.leveldb = l
  const set = [
    l.archived.logs.length > 0 &&
      `${l.archived.logs.length} write-ahead log${l.archived.logs.length === 1 ? '' : 's'} (its ${l.logRecordsSaved} records saved into tables first)`,
    l.archived.manifests.length > 0 && `the old MANIFEST (replaced)`,
    l.archived.tables.length > 0 &&
      `${l.archived.tables.length} damaged table${l.archived.tables.length === 1 ? '' : 's'}`,
  ].filter((s): s is string => typeof s === 'string')
  r.done.push(
    `LevelDB repaired: ${l.tables} table${l.tables === 1 ? '' : 's'} kept` +
      (set.length > 0 ? `; moved to ${join(r.path, 'lost')}: ${set.join(', ')}` : ''),
  )
  r.lost.push(...l.dropped)
}

async function countEntries(r: StoreReport): Promise<void> {
  const all = await readAll(r.path)
  r.entries = all.entries
  if (all.error) r.lost.push(`reading stopped after ${all.entries} entries: ${all.error}`)
  else r.done.push(`every entry read back: ${all.entries}`)
}

/** The embedded broker's persistence, opened as the broker opens it (hub/disk/reopenable-level.ts). */
async function checkBroker(r: StoreReport): Promise<void> {
  const { openReopenable } = await import('../disk/reopenable-level.ts')
  const db = await openReopenable(
    () => new Level<string, Buffer>(r.path, { valueEncoding: 'buffer', ...HUB_LEVELDB_SIZES }),
  )
  await db.close()
  r.opens = true
  await countEntries(r)
}

/**
 * The attestation store, opened as the hub opens it. Its id and its next line number are read
 * first: a store that lost them would take a new id, or write new lines over old ones.
 */
async function checkAttest(r: StoreReport): Promise<void> {
  const raw = new Level<string, unknown>(r.path, { valueEncoding: 'json', createIfMissing: false })
  await raw.open()
  let lastSeq = -1
  let storeId: unknown
  let next: unknown
  try {
    storeId = await raw.get('m:storeId')
    next = await raw.get('m:next')
    for await (const k of raw.keys({ gte: 'l:', lt: 'l;', reverse: true, limit: 1 }))
      lastSeq = Number(k.slice(2))
  } finally {
    await raw.close()
  }
  if (lastSeq >= 0 && storeId === undefined)
    r.lost.push(
      'the store id (m:storeId): the hub will give the store a new one, and lines already sent name the old one',
    )
  if (lastSeq >= 0 && (typeof next !== 'number' || next <= lastSeq))
    r.lost.push(
      `the next line number (m:next is ${String(next)}, the last line is ${lastSeq}): new lines would be written over old ones; keep this store aside (hub/stores/README.md, "Repair")`,
    )
  const { openAttestStore } = await import('../attest/store.ts')
  const store = await openAttestStore(r.path)
  const lines = store.size()
  await store.close()
  r.opens = true
  r.done.push(`attestation store opens: ${lines} lines`)
  await countEntries(r)
}

/**
 * The engine: the history log read first (its torn tail set aside), LevelDB repaired, then the
 * log's batches applied again from its start and the run index rebuilt from it.
 */
async function repairEngine(r: StoreReport, o: RepairOptions): Promise<void> {
  const scan = await scanHistory(join(r.path, 'history'), join(r.path, 'lost'))
  reportHistory(r, scan)
  if (hasLevelFiles(r.path)) await repairLevelStore(r)
  else r.done.push('no LevelDB files: made again from the history log')
  const { DEFAULT_BOUNDS, EngineStore } = await import('../engine/store.ts')
  if (hasLevelFiles(r.path)) await applyWholeLog(r.path)
  let rebuilt = false
  const store = await EngineStore.open(r.path, {
    retention: false,
    history: { ...DEFAULT_BOUNDS, segmentBytes: o.segmentBytes ?? DEFAULT_BOUNDS.segmentBytes },
    onRebuild: (done, of) => {
      rebuilt = true
      o.onProgress?.(`engine: rebuilding the run index from the history log, segment ${done} of ${of}`)
    },
  })
  try {
    r.opens = true
    if (!rebuilt) await store.rebuildIndex()
    let indexed = 0
    let cursor: string | undefined
    do {
      const page = await store.queryRuns(cursor === undefined ? { limit: 1000 } : { limit: 1000, cursor })
      indexed += page.runs.length
      cursor = page.next ?? undefined
    } while (cursor !== undefined)
    const unfinished = (await store.openSummaries()).length
    const keptTriggers = (await store.kept()).length
    r.runs = { indexed, unfinished, keptTriggers }
    r.done.push(
      `run index rebuilt from the history log: ${indexed} runs (${unfinished} not finished), ${keptTriggers} kept triggers`,
    )
  } finally {
    await store.close()
  }
}

/**
 * Unsets how far LevelDB has applied the log (`meta!applied`, hub/engine/README.md "The history
 * log"), so that opening the store applies every batch the log holds again, in order: whatever
 * LevelDB's repair could not keep, and the log still has, comes back. The run index is rebuilt
 * after it.
 */
async function applyWholeLog(path: string): Promise<void> {
  const db = new Level<string, string>(path, { createIfMissing: false })
  await db.open()
  try {
    await db.del('meta!applied', { sync: true })
  } finally {
    await db.close()
  }
}

function reportHistory(r: StoreReport, scan: HistoryScan): void {
  let batches = 0
  let unreadable = 0
  const newest = scan.segments.at(-1)?.name
  for (const s of scan.segments) {
    batches += s.batches
    if (s.name === newest || s.readable === s.bytes) continue
    unreadable += s.bytes - s.readable
    r.lost.push(
      `history segment ${s.name}: ${s.bytes - s.readable} bytes from offset ${s.readable} cannot be read; the runs and records written in them are lost (the file is left as it is)`,
    )
  }
  r.history = {
    segments: scan.segments.length,
    batches,
    unreadableBytes: unreadable,
    tornBytesCut: scan.cut?.bytes ?? 0,
  }
  r.done.push(
    `history log read: ${scan.segments.length} segment${scan.segments.length === 1 ? '' : 's'}, ${batches} batches`,
  )
  if (scan.cut)
    r.done.push(
      `history segment ${scan.cut.segment}: the ${scan.cut.bytes} bytes after its last whole batch are cut (what a stop between a write and its sync leaves, never acknowledged; more than a batch's worth means damage, and batches in it are lost); a copy is in ${scan.cut.keptAs}`,
    )
}
