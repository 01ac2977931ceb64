// The engine's durable state in LevelDB (issue 3, durability): run records, kept triggers
// (deferred/held), admission decisions and per-SOP cooldown marks. Every state change is one
// `sync: true` batch shared with concurrent writers (group-commit.ts). The run index
// (run-index.ts) is written in the same batches as the records it points at, so after a crash
// it never disagrees with them.
import { Level } from 'level'
import type { RunFilter, RunPage, RunSummary } from '../../sops/hub-engine.ts'
import type { AdmissionDecision, AdmissionRecord, KeptTrigger } from '../../sops/engine-api.ts'
import {
  MAX_LOG_ENTRIES,
  type RunRecord,
  type StepRecord,
  payloadAsInput,
  startState,
} from '../../sops/run/record.ts'
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
import { isStoreIoError } from '../disk/errors.ts'

/** A trigger kept for later (SOP-NOTES: admission, durable deferral). */
const RUN = 'run!'
const OPEN = 'open!'
const FIN = 'fin!'
const KEPT = 'kept!'
const ADM = 'adm!'
const LAST = 'last!'
/** Once-only admission marks (engine-api: `TriggerEvent.once`), and the same keys by time for pruning. */
const ONCE = 'once!'
const ONCE_AT = 'onceat!'
/** Fingerprinted once-only marks (`once.fingerprint`): the few latest per key, deleted when forgotten. */
const MARK = 'mark!'
/** The watchdog's heartbeat key (`heartbeatOp`). */
const HEARTBEAT = 'meta!heartbeat'

export interface OnceMark {
  fp: string
  d: AdmissionDecision
}

/** Sortable fixed-width counter so keys iterate in arrival order. */
function seqKey(prefix: string, at: number, seq: number): string {
  return `${prefix}${at.toString(36).padStart(10, '0')}!${seq.toString(36).padStart(8, '0')}`
}

const deltaKey = (id: string, seq: number) => `${RUN}${id}!${seq.toString(36).padStart(6, '0')}`

/** What never changes after a run is created. */
type RunHead = Pick<RunRecord, 'id' | 'sop' | 'mode' | 'trigger' | 'createdAt' | 'admission'>
/** What changes with the run's state: small, carried whole by every delta. */
export type RunStateRecord = Omit<
  RunRecord,
  'id' | 'mode' | 'trigger' | 'admission' | 'steps' | 'log' | 'lastOutput'
>

/**
 * One write of a run: the state record whole, the step records that changed, the log entries
 * added. Delta 0 also carries the head. A run is its deltas applied in order.
 */
interface Delta {
  head?: RunHead
  st: RunStateRecord
  steps?: RunRecord['steps']
  log?: RunRecord['log']
}

/** What was last written for a live run, so a state change writes only what changed. */
interface Written {
  seq: number
  /** Each step record as last written: the object and its JSON. */
  steps: Map<number, { rec: StepRecord; json: string; settled: boolean }>
  logSeq: number
}

/**
 * The state record as stored: what the head says already (`sop`, `createdAt`) and what is still
 * at its start value (sops/run/record.ts `startState`) are left out, and `replay` puts them back:
 * a seventh of a short run's bytes (2,237 → 1,927 in the peer bench), and every byte of a batch
 * is encoded on the main thread, written to the log and compacted later. Left out by being set
 * undefined on the fresh copy: JSON.stringify skips those, and the copy keeps its shape.
 */
function storedState(st: RunStateRecord): RunStateRecord {
  const s = st as { [K in keyof RunStateRecord]: RunStateRecord[K] | undefined }
  s.sop = undefined
  s.createdAt = undefined
  if (isEmpty(s.decisions)) s.decisions = undefined
  if (isEmpty(s.decidedBy)) s.decidedBy = undefined
  if (s.runApproved === false) s.runApproved = undefined
  if (s.passedGates?.length === 0) s.passedGates = undefined
  if (s.approvals?.length === 0) s.approvals = undefined
  if (s.coalesced?.length === 0) s.coalesced = undefined
  if (s.coalescedCount === 0) s.coalescedCount = undefined
  return st
}

function isEmpty(o: object | undefined): boolean {
  for (const _ in o) return false
  return true
}

/**
 * A step record that is settled is never changed in place: engine.ts gives a step a new record
 * each time it is entered (and after a restart), and only the running record is mutated. So a
 * settled record already written as the same object need not be serialised again to compare.
 */
const settled = (rec: StepRecord): boolean => rec.status !== 'running'

export class EngineStore {
  private seq = 0
  /** No index marker yet, and no runs to index: the next write carries the marker. */
  private unmarked = false
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
    private readonly path: string,
    private readonly onWriteError: ((err: unknown) => void) | undefined,
  ) {
    this.committer = new GroupCommitter((ops) => this.writeSynced(ops))
  }

  /**
   * One `sync: true` LevelDB batch. Built as a chained batch: the array form of `batch()` costs
   * about 5 µs of main-thread time per operation in abstract-level/classic-level, the chained
   * form under 1 µs (bench: the engine's batches hold hundreds of operations), and both are the
   * same one atomic, synced WriteBatch.
   */
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

  private async writeBatch(ops: BatchOp[]): Promise<void> {
    const batch = this.db.batch()
    try {
      for (const op of ops) {
        if (op.type === 'put') batch.put(op.key, op.value)
        else batch.del(op.key)
      }
    } catch (err) {
      await batch.close()
      throw err
    }
    await batch.write({ sync: true })
  }

  static async open(
    path: string,
    opts: { onWriteError?: (err: unknown) => void } = {},
  ): Promise<EngineStore> {
    const db = new Level<string, string>(path, { valueEncoding: 'utf8', ...HUB_LEVELDB_SIZES })
    await db.open()
    const store = new EngineStore(db, path, opts.onWriteError)
    if ((await db.get(INDEX_MARKER)) !== INDEX_VERSION) {
      // A store with no runs has nothing to index: its marker rides with its first write, so
      // opening a fresh store writes nothing.
      if (await store.hasRuns()) await store.reindex()
      else store.unmarked = true
    }
    return store
  }

  /**
   * Builds the run index from the records (a store written before the index, or by another
   * layout). The marker goes in last: a crash mid-way leaves no marker, and the next open
   * starts again from nothing.
   */
  private async hasRuns(): Promise<boolean> {
    for (const p of [FIN, OPEN])
      for await (const _ of this.db.keys({ gt: p, lt: `${p}\xff`, limit: 1 })) return true
    return false
  }

  private async reindex(): Promise<void> {
    let ops: BatchOp[] = []
    const flush = async (force = false) => {
      if (ops.length === 0 || (!force && ops.length < 5000)) return
      await this.write(ops)
      ops = []
    }
    for await (const key of this.db.keys({ gte: INDEX, lt: `${INDEX}\xff` })) {
      ops.push({ type: 'del', key })
      await flush()
    }
    for await (const v of this.db.values({ gt: FIN, lt: `${FIN}\xff` })) {
      for (const key of indexKeys(JSON.parse(v) as RunSummary)) ops.push({ type: 'put', key, value: '' })
      await flush()
    }
    for await (const k of this.db.keys({ gt: OPEN, lt: `${OPEN}\xff` })) {
      const r = await this.replay(k.slice(OPEN.length))
      if (r) for (const key of indexKeys(r.run)) ops.push({ type: 'put', key, value: '' })
      await flush()
    }
    await flush(true)
    await this.write([{ type: 'put', key: INDEX_MARKER, value: INDEX_VERSION }])
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
      w = { seq: 0, steps: new Map(), logSeq: 0 }
      this.written.set(run.id, w)
      for (const key of indexKeys(run)) ops.push({ type: 'put', key, value: '' })
      const head: RunHead = {
        id: run.id,
        sop: run.sop,
        mode: run.mode,
        trigger: run.trigger,
        createdAt: run.createdAt,
        admission: run.admission,
      }
      json += `"head":${JSON.stringify(head)},`
      ops.push({ type: 'put', key: OPEN + run.id, value: '' })
    }
    json += `"st":${JSON.stringify(storedState(st))}`
    let changed = ''
    for (const k in steps) {
      const rec = steps[k]!
      // A step just entered is implied by `current`; its record is written once it has a result
      // (engine.ts recover() re-enters it after a restart).
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
    return [
      ...this.runOps(run),
      ...finishedKeys(run).map((key) => ({ type: 'put' as const, key, value: '' })),
      { type: 'put', key: FIN + run.id, value: JSON.stringify(summary) },
      { type: 'del', key: OPEN + run.id },
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
    const out = new Map<string, OnceMark[]>()
    for await (const [k, v] of this.db.iterator({ gt: MARK, lt: MARK + '\xff' }))
      out.set(k.slice(MARK.length), JSON.parse(v) as OnceMark[])
    return out
  }

  async onceDecision(key: string): Promise<AdmissionDecision | undefined> {
    const v = await this.db.get(ONCE + key)
    return v === undefined ? undefined : (JSON.parse(v) as AdmissionDecision)
  }

  /** Forgets once-only marks written before `before` (epoch ms); returns how many. */
  async pruneOnce(before: number): Promise<number> {
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
   * The watchdog's heartbeat (hub/service/store-probe.ts): one key, overwritten. A page long, so
   * it needs a fresh page of the disk as a run's records do: a few bytes could still land in the
   * slack of the log's last page on a full disk.
   */
  heartbeatOp(at: number): BatchOp {
    return { type: 'put', key: HEARTBEAT, value: String(at).padEnd(4096, '.') }
  }

  /** One synced write, shared with concurrent writers (group-commit.ts, also for `defer`). */
  async write(ops: BatchOp[], opts: { defer?: boolean } = {}): Promise<void> {
    if (!this.unmarked) return this.committer.write(ops, opts)
    await this.committer.write([...ops, { type: 'put', key: INDEX_MARKER, value: INDEX_VERSION }], opts)
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
      await this.db.close().catch(() => undefined)
      const db = new Level<string, string>(this.path, { valueEncoding: 'utf8', ...HUB_LEVELDB_SIZES })
      try {
        await db.open()
      } catch (err) {
        this.broken = Object.assign(new Error(`the engine store did not open again: ${String(err)}`), {
          code: 'LEVEL_IO_ERROR',
        })
        throw err
      }
      this.db = db
      this.broken = null
    } finally {
      this.reopening = null
      done()
    }
  }

  /** Replays a run's deltas; also returns how many there were (the next delta's number). */
  private async replay(id: string): Promise<{ run: RunRecord; deltas: number } | undefined> {
    if (this.reopening) await this.reopening
    let head: RunHead | undefined
    let st: RunStateRecord | undefined
    const steps: RunRecord['steps'] = {}
    const log: RunRecord['log'] = []
    let deltas = 0
    for await (const v of this.db.values({ gt: `${RUN}${id}!`, lt: `${RUN}${id}!\xff` })) {
      const d = JSON.parse(v) as Delta
      if (d.head) head = d.head
      st = d.st
      if (d.steps) Object.assign(steps, d.steps)
      if (d.log) log.push(...d.log)
      deltas++
    }
    if (!head || !st) return undefined
    // Keep the same bound as the live log (record.ts: MAX_LOG_ENTRIES).
    if (log.length > MAX_LOG_ENTRIES) log.splice(0, log.length - MAX_LOG_ENTRIES)
    const lastOutput =
      st.lastFrom === null ? payloadAsInput(head.trigger.payload) : (steps[st.lastFrom]?.output ?? null)
    // A record written before `storedState` carries every field; one written since, only those set.
    return { run: { ...head, ...startState(), ...st, steps, log, lastOutput }, deltas }
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
    const fin = await this.db.getMany(wanted.map((p) => FIN + p.id))
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
    const out: RunSummary[] = []
    for await (const k of this.db.keys({ gt: OPEN, lt: `${OPEN}\xff` })) {
      const r = await this.getRun(k.slice(OPEN.length))
      if (r) out.push(summary(r))
    }
    return out
  }

  /** Summaries of the finished runs, in id order: the whole history read (the bench's baseline). */
  async *finished(): AsyncGenerator<unknown> {
    for await (const v of this.db.values({ gt: FIN, lt: FIN + '\xff' })) yield JSON.parse(v)
  }

  /**
   * Full records of the runs that had not finished, remembered as written (after a restart);
   * `known` are left out (runs the engine holds, after a reopen).
   */
  async unfinished(known?: ReadonlySet<string>): Promise<RunRecord[]> {
    const out: RunRecord[] = []
    for await (const k of this.db.keys({ gt: OPEN, lt: OPEN + '\xff' })) {
      if (known?.has(k.slice(OPEN.length))) continue
      const r = await this.replay(k.slice(OPEN.length))
      if (!r) continue
      out.push(r.run)
      const steps = new Map(
        Object.entries(r.run.steps).map(([n, rec]) => [
          Number(n),
          { rec, json: JSON.stringify(rec), settled: settled(rec) },
        ]),
      )
      this.written.set(r.run.id, { seq: r.deltas, steps, logSeq: r.run.logSeq })
    }
    return out
  }

  async kept(): Promise<KeptTrigger[]> {
    const out: KeptTrigger[] = []
    for await (const v of this.db.values({ gt: KEPT, lt: KEPT + '\xff' }))
      out.push(JSON.parse(v) as KeptTrigger)
    return out
  }

  async admissions(limit = 1000): Promise<AdmissionRecord[]> {
    const out: AdmissionRecord[] = []
    for await (const v of this.db.values({ gt: ADM, lt: ADM + '\xff', reverse: true, limit }))
      out.push(JSON.parse(v) as AdmissionRecord)
    return out.reverse()
  }

  async lastFinished(): Promise<Map<string, number>> {
    const out = new Map<string, number>()
    for await (const [k, v] of this.db.iterator({ gt: LAST, lt: LAST + '\xff' }))
      out.set(k.slice(LAST.length), Number(v))
    return out
  }

  async close(): Promise<void> {
    await this.committer.drain()
    await this.db.close()
  }
}
