// Opening the engine store (hub/engine/README.md, "The history log" and "A store from before
// the history log"): LevelDB and the log, then what the open checks before the hub may use them.
// LevelDB is brought up to the log's end, or the index built again when it claims more than the
// log holds; a store written before the log is moved into it; a stale index is rebuilt.
import { join } from 'node:path'
import { Level } from 'level'
import { ENGINE_LEVELDB_SIZES } from '../leveldb.ts'
import type { BatchOp } from './group-commit.ts'
import type { HistoryBounds } from './log/retention.ts'
import { SegmentLog } from './log/segment-log.ts'
import { fold } from './run-deltas.ts'
import { INDEX, INDEX_MARKER, INDEX_VERSION } from './run-index.ts'
import { type StoreContext, segmentTimes } from './store-context.ts'
import { ADM, FIN, LAYOUT, LAYOUT_VERSION, OPEN, RUN } from './store-layout.ts'
import { catchUp, rebuildIndex } from './store-replay.ts'
import { write } from './store-writes.ts'

/** LevelDB and the history log, opened; LevelDB is closed again when the log does not open. */
export async function openFiles(
  path: string,
  bounds: HistoryBounds,
): Promise<{ db: Level<string, string>; log: SegmentLog }> {
  const db = new Level<string, string>(path, { valueEncoding: 'utf8', ...ENGINE_LEVELDB_SIZES })
  await db.open()
  let log: SegmentLog
  try {
    log = await SegmentLog.open(join(path, 'history'), bounds.segmentBytes, await segmentTimes(db))
  } catch (err) {
    await db.close()
    throw err
  }
  return { db, log }
}

/** What an open checks, in this order, before the store is used; the caller closes the files when it throws. */
export async function checkLayout(ctx: StoreContext): Promise<void> {
  const ahead = await catchUp(ctx)
  const layout = await ctx.db.get(LAYOUT)
  if (ahead) {
    ctx.opts.onAheadOfLog?.(ahead.applied, ahead.end)
    await rebuildIndex(ctx, ahead.end)
  } else if (layout === '2' || layout === '3') {
    // Layouts 2 and 3 to 4 move nothing: the marker is set, synced, before the first padded
    // batch and the first run only the run index locates.
    await ctx.db.put(LAYOUT, LAYOUT_VERSION, { sync: true })
    if ((await ctx.db.get(INDEX_MARKER)) !== INDEX_VERSION) await rebuildIndex(ctx)
  } else if (layout !== LAYOUT_VERSION) {
    // A store with no runs has nothing to move or index: its markers ride with its first
    // write, so opening a fresh store writes nothing.
    if (await hasRuns(ctx)) await migrate(ctx)
    else ctx.unmarked = true
  } else if ((await ctx.db.get(INDEX_MARKER)) !== INDEX_VERSION) await rebuildIndex(ctx)
  await logAdmissions(ctx)
  // The finished runs' files, checked, and those missing built (a crash before one was written).
  // It reads where each run's first record is from LevelDB: what a move staged is written first.
  if (!ctx.index.opened) {
    await ctx.settle()
    await ctx.index.open()
  }
}

/**
 * Admission records an older svc kept a LevelDB key for (with a locator, or before the history
 * log with the record itself), left where this svc keeps them: in the log alone (store-layout.ts
 * `logOnly`). A located record is in the log already and only its key goes; a record held as
 * JSON is written to the log, a few thousand to a synced batch, and its key deleted after. A crash
 * between the two logs those again at the next open; they are read back once (store-reads.ts
 * `admissions`). A store with none costs an open one look into LevelDB.
 */
async function logAdmissions(ctx: StoreContext): Promise<void> {
  for (;;) {
    const keys: string[] = []
    const ops: BatchOp[] = []
    for await (const [key, v] of ctx.db.iterator({ gt: ADM, lt: `${ADM}\xff`, limit: 2000 })) {
      keys.push(key)
      if (!v.startsWith('@')) ops.push({ type: 'put', key, value: v })
    }
    if (keys.length === 0) return
    if (ops.length > 0) await write(ctx, ops)
    await ctx.db.batch(keys.map((key) => ({ type: 'del' as const, key })))
  }
}

/** Whether any run is stored (finished or not): a store without one has nothing to move. */
async function hasRuns(ctx: StoreContext): Promise<boolean> {
  for (const p of [FIN, OPEN])
    for await (const _ of ctx.db.keys({ gt: p, lt: `${p}\xff`, limit: 1 })) return true
  return false
}

/**
 * Moves a store written before the history log (run records and summaries as LevelDB values)
 * into it: each run's records are written again through the log, which is all a rebuild of
 * the index needs (its keys and `open!` marker follow from them, `derived`). A crash part-way
 * leaves the layout marker unset and the next open goes on: a record already moved holds a
 * locator and is passed over.
 */
async function migrate(ctx: StoreContext): Promise<void> {
  await ctx.db.clear({ gte: INDEX, lt: `${INDEX}\xff` })
  let total = 0
  let last = ''
  for await (const k of ctx.db.keys({ gt: RUN, lt: `${RUN}\xff` })) {
    const id = k.slice(RUN.length, k.lastIndexOf('!'))
    if (id !== last) total++
    last = id
  }
  // One pass over the run records in key order (a run's records together), with the summaries
  // beside it in the same order: one iterator each, not one per run (595 runs/s were 2 ms of
  // iterator each; bench/backup.bench.ts).
  const fins = ctx.db.iterator({ gt: FIN, lt: `${FIN}\xff` })
  let fin = await fins.next()
  let ops: BatchOp[] = []
  let moved = 0
  const finOf = async (id: string): Promise<string | undefined> => {
    // A summary whose run has no records left (none here) is kept as it is.
    while (fin && fin[0].slice(FIN.length) < id) {
      if (!fin[1].startsWith('@')) ops.push({ type: 'put', key: fin[0], value: fin[1] })
      fin = await fins.next()
    }
    if (fin && fin[0].slice(FIN.length) === id) {
      const v = fin[1]
      fin = await fins.next()
      return v
    }
    return undefined
  }
  const move = async (id: string, keys: string[], values: string[]) => {
    moved++
    keys.forEach((key, i) => {
      if (!values[i]!.startsWith('@')) ops.push({ type: 'put', key, value: values[i]! })
    })
    const summary = await finOf(id)
    if (summary !== undefined && !summary.startsWith('@'))
      ops.push({ type: 'put', key: FIN + id, value: summary })
    const r = fold(keys, await Promise.all(values.map((v) => ctx.valueOf(v))))
    if (r && summary === undefined) ops.push({ type: 'put', key: OPEN + id, value: '', local: true })
    if (ops.length >= 2000) {
      await write(ctx, ops)
      ops = []
      ctx.opts.onMigrate?.(moved, total)
    }
  }
  try {
    let id: string | null = null
    let keys: string[] = []
    let values: string[] = []
    for await (const [k, v] of ctx.db.iterator({ gt: RUN, lt: `${RUN}\xff` })) {
      const kid = k.slice(RUN.length, k.lastIndexOf('!'))
      if (id !== null && kid !== id) {
        await move(id, keys, values)
        keys = []
        values = []
      }
      id = kid
      keys.push(k)
      values.push(v)
    }
    if (id !== null) await move(id, keys, values)
    await finOf('\xff')
  } finally {
    await fins.close()
  }
  ops.push(
    // The watchdog's old heartbeat, a page long, no longer written (`heartbeat`).
    { type: 'del', key: 'meta!heartbeat' },
    { type: 'put', key: INDEX_MARKER, value: INDEX_VERSION },
    { type: 'put', key: LAYOUT, value: LAYOUT_VERSION },
  )
  await write(ctx, ops)
  ctx.opts.onMigrate?.(total, total)
}
