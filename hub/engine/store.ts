// The engine's durable state (hub/engine/README.md, "The history log"): every batch of state
// changes, shared with concurrent writers (group-commit.ts), is appended to the history log
// (log/) and synced there, once. LevelDB beside it holds what is looked up: kept triggers,
// admission records, once-only marks, the run index (run-index.ts), and for each run record and
// finished-run summary not its bytes but where they are in the log. LevelDB is written without
// a sync and says how far into the log it has applied; on open the log's batches past that are
// applied again, so after a crash it never disagrees with the log.
import { join } from 'node:path'
import { Level } from 'level'
import type { HistoryReach, RunFilter, RunPage, RunSummary } from '../../sops/hub-engine.ts'
import type { AdmissionDecision, AdmissionRecord, KeptTrigger } from '../../sops/engine-api.ts'
import type { RunRecord } from '../../sops/run/record.ts'
import { type BatchOp, GroupCommitter } from './group-commit.ts'
import { HUB_LEVELDB_SIZES } from '../leveldb.ts'
import {
  INDEX,
  INDEX_MARKER,
  INDEX_VERSION,
  checkFilter,
  cursorAt,
  finishedKeys,
  idOf,
  indexKeys,
  indexedState,
  position,
  prefixFor,
} from './run-index.ts'
import { summary } from './summary.ts'
import {
  type Delta,
  type Written,
  carryOps,
  fold,
  headOf,
  settled,
  storedState,
  writtenOf,
} from './run-deltas.ts'
import { type StagedOp, StagedWrites } from './staged.ts'
import { isStoreIoError } from '../disk/errors.ts'
import { decodeFrame, encodeBatch, sealBatch, unseal } from './log/frames.ts'
import { type Locator, SegmentLog } from './log/segment-log.ts'
import {
  ADM,
  APPLIED,
  DROPPED,
  FIN,
  FIRST,
  KEPT,
  LAST,
  LAYOUT,
  LAYOUT_VERSION,
  MARK,
  ONCE,
  ONCE_AT,
  OPEN,
  RUN,
  SEGTIME,
  deltaKey,
  inLog,
  indexOp,
  locatorText,
  parseLocator,
  seqKey,
} from './store-layout.ts'
import { type HistoryBounds, retentionEveryMs, segmentsToDrop } from './log/retention.ts'

/**
 * LevelDB's share of the batches is written at most this long after them, or once this many
 * operations wait (staged.ts): an event at a time then costs LevelDB a page per STAGE_MS, not
 * one per event; a crash costs a replay of that much log at the next open.
 */
const STAGE_MS = 5000
const STAGE_MAX_OPS = 8192
/** Keys the log carries for the run index, cleared and applied again by `rebuildIndex`. */
const indexPart = (key: string) => inLog(key) || key.startsWith(OPEN) || key.startsWith(INDEX)

export const DEFAULT_BOUNDS: HistoryBounds = {
  maxAgeMs: 30 * 86_400_000,
  maxBytes: 1024 * 1024 * 1024,
  segmentBytes: 8 * 1024 * 1024,
}

/**
 * The local operations (never logged: BatchOp `local`) a logged one implies: a run's first
 * record puts its "all" and "by SOP" index keys and its `open!` marker; a finished run's summary
 * puts its "by state" keys and removes the marker (run-index.ts).
 */
function derived(op: BatchOp): BatchOp[] {
  if (op.type !== 'put') return []
  if (op.key.startsWith(RUN) && op.key.endsWith(FIRST)) {
    const head = (JSON.parse(op.value) as Delta).head
    if (!head) return []
    return [
      ...indexKeys({ ...head, state: 'pending' }).map((key) => ({ type: 'put' as const, key, value: '' })),
      { type: 'put', key: OPEN + head.id, value: '' },
    ]
  }
  if (op.key.startsWith(FIN)) {
    const s = JSON.parse(op.value) as RunSummary
    return [
      ...finishedKeys(s).map((key) => ({ type: 'put' as const, key, value: '' })),
      { type: 'del', key: OPEN + s.id },
    ]
  }
  return []
}

async function segmentTimes(db: Level<string, string>): Promise<Map<number, number>> {
  const out = new Map<number, number>()
  for await (const [k, v] of db.iterator({ gt: SEGTIME, lt: `${SEGTIME}\xff` }))
    out.set(Number.parseInt(k.slice(SEGTIME.length), 36), Number(v))
  return out
}

export interface OnceMark {
  fp: string
  d: AdmissionDecision
}

export class EngineStore {
  private seq = 0
  /** No index or layout marker yet, and no runs: the next write carries the markers. */
  private unmarked = false
  /** Runs whose finish was handed in since retention last looked (`dropSegment`). */
  private finishedSince = new Set<string>()
  private pruning: Promise<void> | null = null
  private pruneTimer: NodeJS.Timeout | null = null
  /** When a batch was last synced, for the watchdog's heartbeat (epoch ms). */
  private lastSyncAt = 0
  private written = new Map<string, Written>()
  readonly committer: GroupCommitter
  /** While the database is being opened again (`reopen`): writes and reads wait for it. */
  private reopening: Promise<void> | null = null
  /** The batch being written, which a reopen waits out. */
  private writing: Promise<void> | null = null
  /**
   * Set by a write that failed with an I/O error, or a reopen that could not open the database:
   * every write fails with it until the store is opened again. LevelDB itself may take writes
   * after one failed, into a log whose torn record makes it drop them at the next open: they
   * would be acknowledged and lost (measured: hub/README.md, "A full disk").
   */
  private broken: Error | null = null

  private constructor(
    private db: Level<string, string>,
    private log: SegmentLog,
    private readonly path: string,
    private readonly opts: StoreOptions,
  ) {
    this.committer = new GroupCommitter((ops) => this.writeSynced(ops), opts.commitWindowMs ?? 0)
    this.staged = new StagedWrites(
      (ops, applied) => this.writeIndex(ops, applied),
      STAGE_MS,
      STAGE_MAX_OPS,
      () => undefined,
    )
  }

  private readonly staged: StagedWrites
  private segTimeDue: BatchOp | null = null

  private get onWriteError() {
    return this.opts.onWriteError
  }

  private get bounds(): HistoryBounds {
    return this.opts.history ?? DEFAULT_BOUNDS
  }

  private now(): number {
    return this.opts.now?.() ?? Date.now()
  }

  /** One batch: appended to the log and synced there, then applied to LevelDB. */
  private async writeSynced(ops: BatchOp[]): Promise<void> {
    if (this.reopening) await this.reopening
    if (this.broken) {
      // The disk guard reopens the store once there is room; without one, the next write does.
      if (this.onWriteError) throw this.broken
      await this.reopen()
    }
    const written = this.writeBatch(ops)
    this.writing = written
    try {
      await written
    } catch (err) {
      // LevelDB keeps a failed write's error for every later write until it is opened again:
      // the disk guard (hub/disk/) hears of it once and reopens the store when there is room.
      if (isStoreIoError(err)) {
        this.broken = err as Error
        this.onWriteError?.(err)
      }
      throw err
    } finally {
      if (this.writing === written) this.writing = null
    }
  }

  private async writeBatch(batch: BatchOp[]): Promise<void> {
    // A full segment's last write time rides in the log with the next batch, so that a crash
    // before LevelDB has it does not leave retention judging the segment by its file's time.
    const ops = this.segTimeDue ? [...batch, this.segTimeDue] : batch
    this.segTimeDue = null
    const enc = encodeBatch(ops)
    const sealed = await sealBatch(enc.bytes)
    const at = await this.log.append(sealed, this.now())
    this.lastSyncAt = Date.now()
    const staged = ops.map((op, i) =>
      indexOp(op, () => locatorText(at.seg, at.off, sealed.length, enc.frames[i]!)),
    )
    if (at.full) {
      const key = SEGTIME + at.full.n.toString(36)
      const value = String(at.full.lastWriteAt)
      staged.push({ type: 'put', key, value })
      this.segTimeDue = { type: 'put', key, value }
    }
    this.staged.add(staged, `${at.seg}:${at.off + sealed.length}`)
  }

  /**
   * LevelDB's share of logged batches, in one unsynced batch (the log has it all), with how far
   * into the log it reaches (`applied`; null: left as it is). Built as a chained batch: the array
   * form of `batch()` costs about 5 µs of main-thread time per operation in
   * abstract-level/classic-level, the chained form under 1 µs.
   */
  private async writeIndex(ops: readonly StagedOp[], applied: string | null): Promise<void> {
    const batch = this.db.batch()
    try {
      for (const op of ops) {
        if (op.type === 'del') batch.del(op.key)
        else batch.put(op.key, op.value)
      }
      if (applied !== null) batch.put(APPLIED, applied)
    } catch (err) {
      await batch.close()
      throw err
    }
    try {
      await batch.write()
    } catch (err) {
      // The log has it: the store applies it again once it is opened again (`reopen`).
      if (isStoreIoError(err)) {
        this.broken ??= err as Error
        this.onWriteError?.(err)
      }
      throw err
    }
  }

  /** What reads need first: everything logged is in LevelDB. */
  private async settle(): Promise<void> {
    if (this.staged.pending) await this.staged.flush()
  }

  static async open(path: string, opts: StoreOptions = {}): Promise<EngineStore> {
    const db = new Level<string, string>(path, { valueEncoding: 'utf8', ...HUB_LEVELDB_SIZES })
    await db.open()
    let log: SegmentLog
    try {
      log = await SegmentLog.open(
        join(path, 'history'),
        (opts.history ?? DEFAULT_BOUNDS).segmentBytes,
        await segmentTimes(db),
      )
    } catch (err) {
      await db.close()
      throw err
    }
    const store = new EngineStore(db, log, path, opts)
    try {
      const ahead = await store.catchUp()
      if (ahead) {
        opts.onAheadOfLog?.(ahead.applied, ahead.end)
        await store.rebuildIndex(ahead.end)
      } else if ((await db.get(LAYOUT)) !== LAYOUT_VERSION) {
        // A store with no runs has nothing to move or index: its markers ride with its first
        // write, so opening a fresh store writes nothing.
        if (await store.hasRuns()) await store.migrate()
        else store.unmarked = true
      } else if ((await db.get(INDEX_MARKER)) !== INDEX_VERSION) await store.rebuildIndex()
    } catch (err) {
      await store.closeFiles()
      throw err
    }
    store.schedulePrune()
    return store
  }

  /**
   * Applies to LevelDB the log's batches it has not got: those after `meta!applied`, which a
   * crash (or an I/O error between the log's sync and LevelDB's write) may have left out.
   */
  private async catchUp(): Promise<{ applied: string; end: string } | null> {
    const v = await this.db.get(APPLIED)
    const [seg, off] = v ? v.split(':').map(Number) : [0, 0]
    // LevelDB only ever hears of synced batches: past the log's end, the disk lost synced bytes.
    const end = this.log.position()
    if (seg! > end.seg || (seg === end.seg && off! > end.off))
      return { applied: v!, end: `${end.seg}:${end.off}` }
    for (const s of this.log.segments()) {
      if (s.n < seg!) continue
      for (const b of await this.log.scan(s.n, s.n === seg ? off : 0))
        await this.applyScanned(s.n, b.ops, b.end)
    }
    return null
  }

  /**
   * Applies a batch read back from the log, with what its records imply (`derived`); `only`:
   * those keys alone (a rebuild of the index), and `meta!applied` left as it is.
   */
  private applyScanned(
    seg: number,
    scanned: readonly { op: BatchOp; off: number; len: number; inner?: { off: number; len: number } }[],
    end: number,
    only?: (key: string) => boolean,
  ): Promise<void> {
    const ops: StagedOp[] = []
    // What `derived` gives is never in the log, so the locator is only ever the record's own.
    for (const s of scanned)
      for (const op of [s.op, ...derived(s.op)])
        if (!only || only(op.key)) ops.push(indexOp(op, () => locatorText(seg, s.off, s.len, s.inner)))
    return this.writeIndex(ops, only ? null : `${seg}:${end}`)
  }

  /** Whether any run is stored (finished or not): a store without one has nothing to move. */
  private async hasRuns(): Promise<boolean> {
    for (const p of [FIN, OPEN])
      for await (const _ of this.db.keys({ gt: p, lt: `${p}\xff`, limit: 1 })) return true
    return false
  }

  /**
   * Moves a store written before the history log (run records and summaries as LevelDB values)
   * into it: each run's records are written again through the log, which is all a rebuild of
   * the index needs (its keys and `open!` marker follow from them, `derived`). A crash part-way
   * leaves the layout marker unset and the next open goes on: a record already moved holds a
   * locator and is passed over.
   */
  private async migrate(): Promise<void> {
    await this.db.clear({ gte: INDEX, lt: `${INDEX}\xff` })
    let total = 0
    let last = ''
    for await (const k of this.db.keys({ gt: RUN, lt: `${RUN}\xff` })) {
      const id = k.slice(RUN.length, k.lastIndexOf('!'))
      if (id !== last) total++
      last = id
    }
    // One pass over the run records in key order (a run's records together), with the summaries
    // beside it in the same order: one iterator each, not one per run (595 runs/s were 2 ms of
    // iterator each; bench/backup.bench.ts).
    const fins = this.db.iterator({ gt: FIN, lt: `${FIN}\xff` })
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
      const r = fold(keys, await Promise.all(values.map((v) => this.valueOf(v))))
      if (r) {
        if (summary === undefined) ops.push({ type: 'put', key: OPEN + id, value: '', local: true })
        for (const key of indexKeys(r.run)) ops.push({ type: 'put', key, value: '', local: true })
      }
      if (ops.length >= 2000) {
        await this.write(ops)
        ops = []
        this.opts.onMigrate?.(moved, total)
      }
    }
    try {
      let id: string | null = null
      let keys: string[] = []
      let values: string[] = []
      for await (const [k, v] of this.db.iterator({ gt: RUN, lt: `${RUN}\xff` })) {
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
    await this.write(ops)
    this.opts.onMigrate?.(total, total)
  }

  /**
   * Builds the run index again from the log alone: the run records' locators, the `open!`
   * markers and the index keys are cleared, then every batch the log still holds is applied
   * again for those keys. The marker is unset first and set last: a crash part-way leaves the
   * index marked stale, and the next open starts again. `lostTo`: the log ends before where
   * LevelDB said it had applied (`onAheadOfLog`); the admission records and MQTT marks, whose
   * locators may point past the end, are cleared and applied again too, and LevelDB is told it
   * has applied the log up to `lostTo`, its end.
   */
  async rebuildIndex(lostTo?: string): Promise<void> {
    await this.settle()
    await this.db.put(INDEX_MARKER, 'rebuilding', { sync: true })
    const cleared = lostTo === undefined ? [RUN, FIN, OPEN, INDEX] : [RUN, FIN, OPEN, INDEX, ADM, MARK]
    for (const p of cleared) await this.db.clear({ gte: p, lt: `${p}\xff` })
    const segments = this.log.segments()
    for (const [i, s] of segments.entries()) {
      for (const b of await this.log.scan(s.n)) await this.applyScanned(s.n, b.ops, b.end, indexPart)
      this.opts.onRebuild?.(i + 1, segments.length)
    }
    await this.dropHeadless()
    if (lostTo !== undefined) await this.db.put(APPLIED, lostTo)
    await this.db.put(INDEX_MARKER, INDEX_VERSION, { sync: true })
  }

  /**
   * The write that brings the stored run up to `run`: one appended delta (bench: a sync batch
   * costs by its operations and bytes, so a state change is one small put, and the bytes a run
   * writes grow linearly with its steps, not with the square). A new run also gets an `open!`
   * marker, so a restart finds unfinished runs without reading the history. The delta's JSON is
   * assembled from its parts so a changed step is serialised once (compared and written).
   */
  runOps(run: RunRecord): BatchOp[] {
    const ops: BatchOp[] = []
    let w = this.written.get(run.id)
    const { id: _i, mode: _m, trigger: _t, admission: _a, steps, log, lastOutput: _o, ...st } = run
    let json = '{'
    if (!w) {
      // Until retention next reads it: the first run of an empty history is the oldest.
      if (this.oldest === null) this.oldest = run.createdAt
      w = { seq: 0, steps: new Map(), logSeq: 0 }
      this.written.set(run.id, w)
      for (const key of indexKeys(run)) ops.push({ type: 'put', key, value: '', local: true })
      json += `"head":${JSON.stringify(headOf(run))},`
      ops.push({ type: 'put', key: OPEN + run.id, value: '', local: true })
    }
    json += `"st":${JSON.stringify(storedState(st))}`
    let changed = ''
    for (const k in steps) {
      const rec = steps[k]!
      // A step just entered is implied by `current`; its record is written once it has a result
      // (restart.ts `recover` re-enters it after a restart).
      if (rec.status === 'running' && rec.attempts === 0) continue
      const n = Number(k)
      const prev = w.steps.get(n)
      if (prev !== undefined && prev.rec === rec && prev.settled) continue
      const v = JSON.stringify(rec)
      if (prev !== undefined && prev.json === v) {
        prev.rec = rec
        prev.settled = settled(rec)
        continue
      }
      w.steps.set(n, { rec, json: v, settled: settled(rec) })
      changed += `${changed === '' ? '' : ','}${JSON.stringify(String(n))}:${v}`
    }
    if (changed !== '') json += `,"steps":{${changed}}`
    if (run.logSeq > w.logSeq)
      json += `,"log":${JSON.stringify(log.slice(Math.max(0, log.length - (run.logSeq - w.logSeq))))}`
    w.logSeq = run.logSeq
    json += '}'
    ops.push({ type: 'put', key: deltaKey(run.id, w.seq++), value: json })
    return ops
  }

  /**
   * With the final delta: a summary for listings, the run's keys in the index by its final state
   * (run-index.ts), and the `open!` marker removed.
   */
  finishOps(run: RunRecord, summary: object): BatchOp[] {
    // Only a pass of retention asks (`dropSegment`): kept while one runs, or it would hold
    // every finished run's id.
    if (this.pruning) this.finishedSince.add(run.id)
    return [
      ...this.runOps(run),
      ...finishedKeys(run).map((key) => ({ type: 'put' as const, key, value: '', local: true as const })),
      { type: 'put', key: FIN + run.id, value: JSON.stringify(summary) },
      { type: 'del', key: OPEN + run.id, local: true },
    ]
  }

  /** A finished run is no longer written; drop what was remembered about it. */
  forget(runId: string): void {
    this.written.delete(runId)
  }

  keptOp(kept: KeptTrigger): BatchOp {
    return { type: 'put', key: kept.key, value: JSON.stringify(kept) }
  }

  unkeepOp(key: string): BatchOp {
    return { type: 'del', key }
  }

  newKeptKey(at: number): string {
    return seqKey(KEPT, at, this.seq++)
  }

  admissionOp(rec: AdmissionRecord): BatchOp {
    return { type: 'put', key: seqKey(ADM, rec.at, this.seq++), value: JSON.stringify(rec) }
  }

  /** Marks `key` admitted with decision `d`; written in the admission's own batch. */
  onceOps(key: string, d: AdmissionDecision, at: number): BatchOp[] {
    return [
      { type: 'put', key: ONCE + key, value: JSON.stringify(d) },
      { type: 'put', key: `${ONCE_AT}${at.toString(36).padStart(10, '0')}!${key}`, value: '' },
    ]
  }

  /** The marks under `key`, newest last; none: the key is deleted. */
  markOp(key: string, marks: readonly OnceMark[]): BatchOp {
    if (marks.length === 0) return { type: 'del', key: MARK + key }
    return { type: 'put', key: MARK + key, value: JSON.stringify(marks) }
  }

  /** The fingerprinted marks left by the last run of the hub (not yet forgotten). */
  async marks(): Promise<Map<string, OnceMark[]>> {
    await this.settle()
    const out = new Map<string, OnceMark[]>()
    for await (const [k, v] of this.db.iterator({ gt: MARK, lt: MARK + '\xff' })) {
      // A mark in a segment retention dropped is far older than the 30 s a mark is kept for.
      const text = await this.valueOf(v)
      if (text !== undefined) out.set(k.slice(MARK.length), JSON.parse(text) as OnceMark[])
    }
    return out
  }

  async onceDecision(key: string): Promise<AdmissionDecision | undefined> {
    const staged = this.staged.get(ONCE + key)
    const v = staged !== undefined ? (staged ?? undefined) : await this.db.get(ONCE + key)
    return v === undefined ? undefined : (JSON.parse(v) as AdmissionDecision)
  }

  /** Forgets once-only marks written before `before` (epoch ms); returns how many. */
  async pruneOnce(before: number): Promise<number> {
    await this.settle()
    const ops: { type: 'del'; key: string }[] = []
    const lt = `${ONCE_AT}${before.toString(36).padStart(10, '0')}`
    for await (const k of this.db.keys({ gt: ONCE_AT, lt })) {
      ops.push({ type: 'del', key: k }, { type: 'del', key: ONCE + k.slice(ONCE_AT.length + 11) })
    }
    if (ops.length > 0) await this.write(ops)
    return ops.length / 2
  }

  lastFinishedOp(sop: string, at: number): BatchOp {
    return { type: 'put', key: LAST + sop, value: String(at) }
  }

  /**
   * After a rebuild: a run whose first record was in a segment retention dropped (its later
   * records and summary in a kept one) was removed by retention; its keys go again.
   */
  private async dropHeadless(): Promise<void> {
    const headless = new Set<string>()
    let last = ''
    for await (const k of this.db.keys({ gt: RUN, lt: `${RUN}\xff` })) {
      const id = k.slice(RUN.length, k.lastIndexOf('!'))
      if (id === last) continue
      last = id
      if (!k.endsWith(FIRST)) headless.add(id)
    }
    for await (const k of this.db.keys({ gt: FIN, lt: `${FIN}\xff` }))
      if ((await this.db.get(deltaKey(k.slice(FIN.length), 0))) === undefined)
        headless.add(k.slice(FIN.length))
    for (const id of headless) {
      const gone = [FIN + id, OPEN + id]
      for await (const k of this.db.keys({ gt: `${RUN}${id}!`, lt: `${RUN}${id}!\xff` })) gone.push(k)
      const fin = await this.valueOf(await this.db.get(FIN + id))
      if (fin !== undefined) gone.push(...indexKeys(JSON.parse(fin) as RunSummary))
      await this.db.batch(gone.map((key) => ({ type: 'del' as const, key })))
    }
  }

  /**
   * The watchdog's heartbeat (hub/service/store-probe.ts): resolves once the store has synced a
   * batch within `freshMs`, riding with the next batch when one is being written, and writes an
   * empty batch (a commit frame) only when the hub has been idle that long. It fails while
   * writes fail. An idle hub so costs the card one page per `freshMs`, not one per check.
   */
  async heartbeat(freshMs = 300_000): Promise<void> {
    if (this.broken) throw this.broken
    if (Date.now() - this.lastSyncAt < freshMs) return
    await this.write([])
  }

  /** One synced write, shared with concurrent writers (group-commit.ts, also for `defer`). */
  async write(ops: BatchOp[], opts: { defer?: boolean } = {}): Promise<void> {
    if (!this.unmarked) return this.committer.write(ops, opts)
    await this.committer.write(
      [
        ...ops,
        { type: 'put', key: INDEX_MARKER, value: INDEX_VERSION },
        { type: 'put', key: LAYOUT, value: LAYOUT_VERSION },
      ],
      opts,
    )
    this.unmarked = false
  }

  /**
   * Closes the database and opens it again: LevelDB refuses every write after one failed (a full
   * disk) until then. Writes and the run reads wait meanwhile; a write under way is waited out.
   * When it cannot be opened, writes fail with an I/O error (the engine's checkpoints wait and
   * retry) until a later reopen succeeds.
   */
  async reopen(): Promise<void> {
    let done = (): void => undefined
    this.reopening = new Promise<void>((resolve) => (done = resolve))
    try {
      while (this.writing) await this.writing.catch(() => undefined)
      // What was staged is in the log: applied again from it below (`catchUp`).
      await this.staged.discard()
      await this.closeFiles()
      const db = new Level<string, string>(this.path, { valueEncoding: 'utf8', ...HUB_LEVELDB_SIZES })
      try {
        await db.open()
        this.db = db
        this.log = await SegmentLog.open(
          join(this.path, 'history'),
          this.bounds.segmentBytes,
          await segmentTimes(db),
        )
        await this.catchUp()
      } catch (err) {
        this.broken = Object.assign(new Error(`the engine store did not open again: ${String(err)}`), {
          code: 'LEVEL_IO_ERROR',
        })
        throw err
      }
      this.broken = null
    } finally {
      this.reopening = null
      done()
    }
  }

  /**
   * Replays a run's deltas; also returns the next delta's number and the keys it read, which are
   * exactly the records the run is replayed from.
   */
  private async replay(id: string): Promise<{ run: RunRecord; deltas: number; keys: string[] } | undefined> {
    if (this.reopening) await this.reopening
    await this.settle()
    const stored: string[] = []
    const keys: string[] = []
    for await (const [k, v] of this.db.iterator({ gt: `${RUN}${id}!`, lt: `${RUN}${id}!\xff` })) {
      stored.push(v)
      keys.push(k)
    }
    return fold(keys, await Promise.all(stored.map((v) => this.valueOf(v))))
  }

  async getRun(id: string): Promise<RunRecord | undefined> {
    return (await this.replay(id))?.run
  }

  /**
   * A newest-first page from the run index. `live` are the runs not finished: the engine's
   * memory, which may be ahead of the store (their index entries are skipped and the memory's
   * version merged in); without it, the runs with an `open!` marker, from their records (a store
   * read with no engine). A run indexed but neither live nor finished (its finish being written)
   * is replayed from its deltas.
   */
  async queryRuns(filter: RunFilter, live?: readonly RunSummary[]): Promise<RunPage> {
    const { limit, lower, upper } = checkFilter(filter)
    if (this.reopening) await this.reopening
    await this.settle()
    live ??= await this.openSummaries()
    const prefix = prefixFor(filter)
    const liveIds = new Set<string>()
    const page: { pos: string; run?: RunSummary; id: string }[] = []
    for (const r of live) {
      liveIds.add(r.id)
      if (filter.sop !== undefined && r.sop !== filter.sop) continue
      if (filter.state !== undefined && r.state !== filter.state) continue
      const pos = position(r)
      if (pos >= lower && pos < upper) page.push({ pos, run: r, id: r.id })
    }
    let fromStore = 0
    // A state the index does not hold (not finished) is served by the live runs alone.
    const keys =
      filter.state !== undefined && !indexedState(filter.state)
        ? []
        : this.db.keys({ gte: prefix + lower, lt: prefix + upper, reverse: true })
    for await (const k of keys) {
      const id = idOf(k)
      if (liveIds.has(id)) continue
      page.push({ pos: k.slice(prefix.length), id })
      if (++fromStore > limit) break
    }
    page.sort((a, b) => (a.pos < b.pos ? 1 : a.pos > b.pos ? -1 : 0))
    page.length = Math.min(page.length, limit + 1)
    const wanted = page.filter((p) => !p.run)
    const fin = await Promise.all(
      (await this.db.getMany(wanted.map((p) => FIN + p.id))).map((v) => this.valueOf(v)),
    )
    for (let i = 0; i < wanted.length; i++) {
      const v = fin[i]
      if (v !== undefined) wanted[i]!.run = JSON.parse(v) as RunSummary
      else {
        const r = await this.getRun(wanted[i]!.id)
        if (r) wanted[i]!.run = summary(r)
      }
    }
    const runs = page
      .slice(0, limit)
      .map((p) => p.run)
      .filter((r): r is RunSummary => r !== undefined)
    return { runs, next: page.length > limit ? cursorAt(page[limit - 1]!.pos) : null }
  }

  /** Summaries of the runs not finished, from their records (what the engine would hold in memory). */
  async openSummaries(): Promise<RunSummary[]> {
    await this.settle()
    const out: RunSummary[] = []
    for await (const k of this.db.keys({ gt: OPEN, lt: `${OPEN}\xff` })) {
      const r = await this.getRun(k.slice(OPEN.length))
      if (r) out.push(summary(r))
    }
    return out
  }

  /** Summaries of the finished runs, in id order: the whole history read (the bench's baseline). */
  async *finished(): AsyncGenerator<unknown> {
    await this.settle()
    for await (const v of this.db.values({ gt: FIN, lt: FIN + '\xff' })) {
      const text = await this.valueOf(v)
      if (text !== undefined) yield JSON.parse(text)
    }
  }

  /**
   * Full records of the runs that had not finished, remembered as written (after a restart);
   * `known` are left out (runs the engine holds, after a reopen).
   */
  async unfinished(known?: ReadonlySet<string>): Promise<RunRecord[]> {
    await this.settle()
    const out: RunRecord[] = []
    for await (const k of this.db.keys({ gt: OPEN, lt: OPEN + '\xff' })) {
      if (known?.has(k.slice(OPEN.length))) continue
      const r = await this.replay(k.slice(OPEN.length))
      if (!r) continue
      out.push(r.run)
      this.written.set(r.run.id, writtenOf(r.run, r.deltas))
    }
    return out
  }

  async kept(): Promise<KeptTrigger[]> {
    await this.settle()
    const out: KeptTrigger[] = []
    for await (const v of this.db.values({ gt: KEPT, lt: KEPT + '\xff' }))
      out.push(JSON.parse(v) as KeptTrigger)
    return out
  }

  async admissions(limit = 1000): Promise<AdmissionRecord[]> {
    await this.settle()
    const out: AdmissionRecord[] = []
    const stored: string[] = []
    for await (const v of this.db.values({ gt: ADM, lt: ADM + '\xff', reverse: true, limit })) stored.push(v)
    // A record in a segment dropped for size before its age came: gone with it.
    for (const text of await Promise.all(stored.map((v) => this.valueOf(v))))
      if (text !== undefined) out.push(JSON.parse(text) as AdmissionRecord)
    return out.reverse()
  }

  async lastFinished(): Promise<Map<string, number>> {
    await this.settle()
    const out = new Map<string, number>()
    for await (const [k, v] of this.db.iterator({ gt: LAST, lt: LAST + '\xff' }))
      out.set(k.slice(LAST.length), Number(v))
    return out
  }

  /**
   * A value as LevelDB holds it: a locator is read from the log (undefined when its segment is
   * gone); anything else is the value itself (a store not yet migrated).
   */
  private async valueOf(v: string | undefined): Promise<string | undefined> {
    if (v === undefined || !v.startsWith('@')) return v
    const loc = parseLocator(v)
    let frame: Buffer | null
    if (!loc.inner) frame = await this.log.read(loc)
    else {
      const block = await this.block(loc)
      frame = block ? block.subarray(loc.inner.off, loc.inner.off + loc.inner.len) : null
    }
    if (frame === null) return undefined
    const op = decodeFrame(frame)
    return op.type === 'put' ? op.value : undefined
  }

  /** Backups reading the store (`exportRecords`): retention waits for them. */
  private exporting = 0

  /**
   * What a backup keeps (hub/backup/README.md, "What an archive holds"), as the store kept it
   * before the history log (a key and its JSON value): a restore loads them into a fresh
   * LevelDB, and the open after it moves them into a log of its own (`migrate`). One LevelDB
   * snapshot, once everything logged is applied to it; no retention pass runs while it is read,
   * so every segment a locator points into stays. Left out: what the log or a migration makes
   * again (the index, `meta!`). `history: false` also leaves out finished runs and admission
   * records: what stays is what the hub would go on with.
   */
  async *exportRecords(opts: { history: boolean }): AsyncGenerator<[string, string]> {
    this.exporting++
    try {
      if (this.pruning) await this.pruning
      await this.settle()
      // In key order `open!` comes before `run!`: the unfinished runs are known by then.
      const open = new Set<string>()
      // Values read from the log a few hundred at a time, not one after another.
      let chunk: [string, string][] = []
      const read = async () => {
        const texts = await Promise.all(chunk.map(([, v]) => this.valueOf(v)))
        const out = chunk.flatMap(([key], i) =>
          texts[i] === undefined ? [] : [[key, texts[i]!] as [string, string]],
        )
        chunk = []
        return out
      }
      for await (const [key, v] of this.db.iterator()) {
        if (key.startsWith('meta!') || key.startsWith(INDEX)) continue
        if (!opts.history) {
          if (key.startsWith(FIN) || key.startsWith(ADM)) continue
          if (key.startsWith(OPEN)) open.add(key.slice(OPEN.length))
          if (key.startsWith(RUN) && !open.has(key.slice(RUN.length, key.lastIndexOf('!')))) continue
        }
        chunk.push([key, v])
        // A value in a segment retention dropped before (an old admission record) is gone.
        if (chunk.length >= 256) yield* await read()
      }
      yield* await read()
    } finally {
      this.exporting--
    }
  }

  /** Deflated batches read lately: a run's records are mostly in one or two. */
  private blocks = new Map<string, Promise<Buffer | null>>()

  /** A batch's records, inflated once however many reads ask for it at the same time. */
  private block(loc: Locator): Promise<Buffer | null> {
    const key = `${loc.seg}.${loc.off}`
    const hit = this.blocks.get(key)
    if (hit) return hit
    const block = this.log.read(loc).then((frame) => (frame === null ? null : unseal(frame)))
    if (this.blocks.size >= 16) this.blocks.delete(this.blocks.keys().next().value!)
    this.blocks.set(key, block)
    // A failed or missing read is not kept: the next asks again.
    block.then(
      (b) => b === null && this.blocks.delete(key),
      () => this.blocks.delete(key),
    )
    return block
  }

  /** How far back the history reaches and what it takes on disk (`svc hub status`, the console). */
  history(): HistoryReach {
    return {
      oldestAt: this.oldest,
      logBytes: this.log.bytes(),
      segments: this.log.segments().length,
      maxAgeMs: this.bounds.maxAgeMs,
      maxBytes: this.bounds.maxBytes,
    }
  }

  /** The creation time of the oldest run in the index, read when retention last looked. */
  private oldest: number | null = null

  private async readOldest(): Promise<void> {
    await this.settle()
    this.oldest = null
    for await (const k of this.db.keys({ gt: `${INDEX}a!`, lt: `${INDEX}a!\xff`, limit: 1 }))
      this.oldest = Number.parseInt(k.slice(`${INDEX}a!`.length, `${INDEX}a!`.length + 10), 36)
  }

  private schedulePrune(): void {
    if (this.opts.retention === false) {
      void this.prune().catch(() => undefined)
      return
    }
    const every = retentionEveryMs(this.bounds)
    this.pruneTimer = setInterval(() => void this.prune().catch(() => undefined), every)
    this.pruneTimer.unref()
    void this.prune().catch(() => undefined)
  }

  /**
   * One pass of retention: drops the segments past the bounds (retention.ts), and the admission
   * records older than the age bound. Runs beside the event path: its writes go through the
   * group committer like any other. A pass already under way is waited for, not doubled.
   */
  prune(): Promise<void> {
    this.pruning ??= this.prunePass().finally(() => {
      this.pruning = null
      this.finishedSince.clear()
    })
    return this.pruning
  }

  private async prunePass(): Promise<void> {
    if (this.opts.retention === false || this.exporting > 0) return this.readOldest()
    if (this.broken || this.reopening) return
    const now = this.now()
    for (const n of segmentsToDrop(this.log.segments(), this.log.position().seg, now, this.bounds))
      if (!(await this.dropSegment(n))) break
    const before = seqKey(ADM, Math.max(0, now - this.bounds.maxAgeMs), 0)
    await this.settle()
    let ops: BatchOp[] = []
    for await (const key of this.db.keys({ gt: ADM, lt: before })) {
      ops.push({ type: 'del', key })
      if (ops.length >= 1000) {
        await this.write(ops)
        ops = []
      }
    }
    if (ops.length > 0) await this.write(ops)
    await this.readOldest()
  }

  /**
   * Drops one segment. The runs whose first record is in it: a finished one leaves the index
   * with all its records; an unfinished one (running, at a gate, waiting for approval) is
   * carried forward, its records written again as one into the segment being written. LevelDB
   * is synced before the file goes, so the kept triggers and once-only marks the segment's
   * batches carried are durable without it (admission records and MQTT marks, whose values are
   * in the log, go with it). Returns false when a run finished while the pass read it: the
   * segment is left for the next pass.
   */
  private async dropSegment(n: number): Promise<boolean> {
    await this.settle()
    this.finishedSince.clear()
    const heads = new Set<string>()
    for (const b of await this.log.scan(n))
      for (const { op } of b.ops)
        if (op.type === 'put' && op.key.startsWith(RUN) && op.key.endsWith(FIRST))
          heads.add(op.key.slice(RUN.length, -FIRST.length))
    let carry: BatchOp[] = []
    let carriedIds: string[] = []
    // A run finished after it was read open would be carried on as unfinished: leave the segment.
    const flushCarry = async (): Promise<boolean> => {
      if (carriedIds.some((id) => this.finishedSince.has(id))) return false
      if (carry.length > 0) await this.write(carry)
      carry = []
      carriedIds = []
      return true
    }
    const gone: string[] = []
    let removed = 0
    let carried = 0
    // Read in chunks, each run's keys at once: a segment holds thousands of runs, and retention
    // must drop them faster than a burst writes them.
    const ids = [...heads]
    for (let c = 0; c < ids.length; c += 256) {
      const chunk = ids.slice(c, c + 256)
      const [firsts, opens, fins] = await Promise.all([
        this.db.getMany(chunk.map((id) => deltaKey(id, 0))),
        this.db.getMany(chunk.map((id) => OPEN + id)),
        this.db.getMany(chunk.map((id) => FIN + id)),
      ])
      await Promise.all(
        chunk.map(async (id, i) => {
          const loc = firsts[i]
          if (loc === undefined || !loc.startsWith('@') || parseLocator(loc).seg !== n) return
          if (opens[i] !== undefined) {
            const r = await this.replay(id)
            if (r) {
              // The records replayed, no more: a record written since stays after the carried one.
              carry.push(...carryOps(r.run, r.keys))
              carriedIds.push(id)
              carried++
              return
            }
          }
          // Finished: its index keys from its summary, not its records.
          const keys: string[] = []
          for await (const k of this.db.keys({ gt: `${RUN}${id}!`, lt: `${RUN}${id}!\xff` })) keys.push(k)
          const fin = await this.valueOf(fins[i])
          const indexed = fin !== undefined ? (JSON.parse(fin) as RunSummary) : (await this.replay(id))?.run
          gone.push(...keys, FIN + id, OPEN + id, ...(indexed ? indexKeys(indexed) : []))
          removed++
        }),
      )
      if (carry.length >= 2000 && !(await flushCarry())) return false
    }
    if (!(await flushCarry())) return false
    // A finished run's keys go from LevelDB alone, not through the log: the log needs no record
    // of it (`rebuildIndex` leaves out a run whose first record is gone). The batch is synced,
    // and with it every earlier LevelDB write, before the file goes.
    await this.db.batch(
      [
        ...gone.map((key) => ({ type: 'del' as const, key })),
        { type: 'del', key: SEGTIME + n.toString(36) },
        { type: 'put', key: DROPPED, value: String(n) },
      ],
      { sync: true },
    )
    await this.log.drop(n)
    this.opts.onDrop?.({ segment: n, removed, carried })
    return true
  }

  private async closeFiles(): Promise<void> {
    await this.db.close().catch(() => undefined)
    await this.log.close()
  }

  async close(): Promise<void> {
    if (this.pruneTimer) clearInterval(this.pruneTimer)
    while (this.pruning) await this.pruning.catch(() => undefined)
    await this.committer.drain()
    await this.settle().catch(() => undefined)
    await this.closeFiles()
  }
}

export interface StoreOptions {
  onWriteError?: (err: unknown) => void
  /** How much finished history to keep; default 30 days and 1 GiB in 8 MiB segments. */
  history?: HistoryBounds
  /**
   * false: this process only reads the records (`svc sop runs` with no hub running): no segment
   * is dropped, by a timer or by `prune`, which then only reads how far back the history reaches.
   */
  retention?: boolean
  /** How long a write waits for others to share its sync (group-commit.ts); 0: not at all. */
  commitWindowMs?: number
  /** The clock retention judges age by (the engine's). */
  now?: () => number
  /** Told of the progress of a rebuild of the index: segments read of how many. */
  onRebuild?: (done: number, of: number) => void
  /** Told of the progress of a move into the log (a store from before it): runs moved of how many. */
  onMigrate?: (done: number, of: number) => void
  /**
   * Told that LevelDB said it had applied more of the log than the log holds (`applied` past
   * `end`): a disk that reported a sync it had not made. The index is then built again from
   * what the log holds.
   */
  onAheadOfLog?: (applied: string, end: string) => void
  /** Told of each segment retention dropped: finished runs removed, unfinished ones carried on. */
  onDrop?: (d: { segment: number; removed: number; carried: number }) => void
}
