// The engine's durable state in LevelDB (issue 3, durability): run records, kept triggers
// (deferred/held), admission decisions and per-SOP cooldown marks. Every state change is one
// `sync: true` batch shared with concurrent writers (group-commit.ts).
import { Level } from 'level'
import type { AdmissionDecision, TriggerEvent } from '../../sops/engine-api.ts'
import { MAX_LOG_ENTRIES, type RunRecord, payloadAsInput } from '../../sops/run/record.ts'
import { type BatchOp, GroupCommitter } from './group-commit.ts'

/** A trigger kept for later (SOP-NOTES: admission, durable deferral). */
export interface KeptTrigger {
  key: string
  sop: string
  kind: 'deferred' | 'held'
  event: TriggerEvent
  reason: string
  at: number
}

export interface AdmissionRecord extends AdmissionDecision {
  sop: string
  at: number
  source: string
}

const RUN = 'run!'
const ST = 'st!'
const STEP = 'step!'
const LOG = 'log!'
const KEPT = 'kept!'
const ADM = 'adm!'
const LAST = 'last!'

/** Sortable fixed-width counter so keys iterate in arrival order. */
function seqKey(prefix: string, at: number, seq: number): string {
  return `${prefix}${at.toString(36).padStart(10, '0')}!${seq.toString(36).padStart(8, '0')}`
}

const stepKey = (id: string, n: number) => `${STEP}${id}!${String(n).padStart(4, '0')}`
const logKey = (id: string, seq: number) => `${LOG}${id}!${seq.toString(36).padStart(8, '0')}`

/** What never changes after a run is created. */
type RunHead = Pick<RunRecord, 'id' | 'sop' | 'mode' | 'trigger' | 'createdAt' | 'admission'>
/** What changes with the run's state: small, rewritten at each state change. */
type RunState = Omit<RunRecord, 'id' | 'mode' | 'trigger' | 'admission' | 'steps' | 'log' | 'lastOutput'>

/** What was last written for a live run, so a state change writes only the parts that changed. */
interface Written {
  st: string
  steps: Map<number, string>
  logSeq: number
}

export class EngineStore {
  private seq = 0
  private written = new Map<string, Written>()
  readonly committer: GroupCommitter

  private constructor(private readonly db: Level<string, string>) {
    this.committer = new GroupCommitter((ops) => this.db.batch(ops, { sync: true }))
  }

  static async open(path: string): Promise<EngineStore> {
    const db = new Level<string, string>(path, { valueEncoding: 'utf8' })
    await db.open()
    return new EngineStore(db)
  }

  /**
   * The writes that bring the stored run up to `run`: the head once, the state record, and only
   * the steps and log entries that changed since the last write. A run's record is split so that
   * a state change costs a few hundred bytes, not the whole growing record (bench: sync batches
   * are bound by the bytes they carry).
   */
  runOps(run: RunRecord): BatchOp[] {
    const ops: BatchOp[] = []
    let w = this.written.get(run.id)
    if (!w) {
      const head: RunHead = { id: run.id, sop: run.sop, mode: run.mode, trigger: run.trigger, createdAt: run.createdAt, admission: run.admission }
      ops.push({ type: 'put', key: RUN + run.id, value: JSON.stringify(head) })
      w = { st: '', steps: new Map(), logSeq: 0 }
      this.written.set(run.id, w)
    }
    const { id: _i, mode: _m, trigger: _t, admission: _a, steps, log, lastOutput: _o, ...state } = run
    const st = JSON.stringify(state satisfies RunState)
    if (st !== w.st) {
      ops.push({ type: 'put', key: ST + run.id, value: st })
      w.st = st
    }
    for (const [k, rec] of Object.entries(steps)) {
      // A step just entered is implied by `current`; its record is written when it has a result
      // (the restart rule in engine.ts: recover() re-enters it).
      if (rec.status === 'running' && rec.attempts === 0) continue
      const n = Number(k)
      const v = JSON.stringify(rec)
      if (w.steps.get(n) !== v) {
        ops.push({ type: 'put', key: stepKey(run.id, n), value: v })
        w.steps.set(n, v)
      }
    }
    // New log entries go in one chunk keyed by the sequence of its first entry: one put per
    // state change however many entries it logged. (The in-memory log is bounded; so is a run's
    // stored log in practice, since entries come from state changes and visits are capped.)
    if (run.logSeq > w.logSeq) {
      const fresh = log.slice(Math.max(0, log.length - (run.logSeq - w.logSeq)))
      ops.push({ type: 'put', key: logKey(run.id, run.logSeq - fresh.length), value: JSON.stringify(fresh) })
    }
    w.logSeq = run.logSeq
    return ops
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

  lastFinishedOp(sop: string, at: number): BatchOp {
    return { type: 'put', key: LAST + sop, value: String(at) }
  }

  write(ops: BatchOp[]): Promise<void> {
    return this.committer.write(ops)
  }

  private async assemble(id: string, stText: string): Promise<RunRecord | undefined> {
    const headText = await this.db.get(RUN + id)
    if (headText === undefined) return undefined
    const head = JSON.parse(headText) as RunHead
    const state = JSON.parse(stText) as RunState
    const steps: RunRecord['steps'] = {}
    for await (const v of this.db.values({ gt: `${STEP}${id}!`, lt: `${STEP}${id}!\xff` })) {
      const rec = JSON.parse(v) as RunRecord['steps'][string]
      steps[rec.number] = rec
    }
    const log: RunRecord['log'] = []
    for await (const v of this.db.values({ gt: `${LOG}${id}!`, lt: `${LOG}${id}!\xff` })) log.push(...(JSON.parse(v) as RunRecord['log']))
    // Keep the same bound as the live log (record.ts: MAX_LOG_ENTRIES).
    if (log.length > MAX_LOG_ENTRIES) log.splice(0, log.length - MAX_LOG_ENTRIES)
    const lastOutput = state.lastFrom === null ? payloadAsInput(head.trigger.payload) : (steps[state.lastFrom]?.output ?? null)
    return { ...head, ...state, steps, log, lastOutput }
  }

  async getRun(id: string): Promise<RunRecord | undefined> {
    const st = await this.db.get(ST + id)
    return st === undefined ? undefined : this.assemble(id, st)
  }

  /** The state record of every stored run (id, sop, state, gate… but no steps or log). */
  async *states(): AsyncGenerator<RunState & { id: string }> {
    for await (const [k, v] of this.db.iterator({ gt: ST, lt: ST + '\xff' })) yield { id: k.slice(ST.length), ...(JSON.parse(v) as RunState) }
  }

  /** Full records of the runs that had not finished, remembered as written (after a restart). */
  async unfinished(isFinished: (s: RunRecord['state']) => boolean): Promise<RunRecord[]> {
    const out: RunRecord[] = []
    for await (const s of this.states()) {
      if (isFinished(s.state)) continue
      const run = await this.getRun(s.id)
      if (!run) continue
      out.push(run)
      const { id: _i, mode: _m, trigger: _t, admission: _a, steps, log: _l, lastOutput: _o, ...state } = run
      this.written.set(run.id, { st: JSON.stringify(state), steps: new Map(Object.entries(steps).map(([k, v]) => [Number(k), JSON.stringify(v)])), logSeq: run.logSeq })
    }
    return out
  }

  async kept(): Promise<KeptTrigger[]> {
    const out: KeptTrigger[] = []
    for await (const v of this.db.values({ gt: KEPT, lt: KEPT + '\xff' })) out.push(JSON.parse(v) as KeptTrigger)
    return out
  }

  async admissions(limit = 1000): Promise<AdmissionRecord[]> {
    const out: AdmissionRecord[] = []
    for await (const v of this.db.values({ gt: ADM, lt: ADM + '\xff', reverse: true, limit })) out.push(JSON.parse(v) as AdmissionRecord)
    return out.reverse()
  }

  async lastFinished(): Promise<Map<string, number>> {
    const out = new Map<string, number>()
    for await (const [k, v] of this.db.iterator({ gt: LAST, lt: LAST + '\xff' })) out.set(k.slice(LAST.length), Number(v))
    return out
  }

  async close(): Promise<void> {
    await this.committer.drain()
    await this.db.close()
  }
}
