// The engine's durable state in LevelDB (issue 3, durability): run records, kept triggers
// (deferred/held), admission decisions and per-SOP cooldown marks. Every state change is one
// `sync: true` batch shared with concurrent writers (group-commit.ts).
import { Level } from 'level'
import type { AdmissionDecision, TriggerEvent } from '../../sops/engine-api.ts'
import type { RunRecord } from '../../sops/run/record.ts'
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
const KEPT = 'kept!'
const ADM = 'adm!'
const LAST = 'last!'

/** Sortable fixed-width counter so keys iterate in arrival order. */
function seqKey(prefix: string, at: number, seq: number): string {
  return `${prefix}${at.toString(36).padStart(10, '0')}!${seq.toString(36).padStart(8, '0')}`
}

export class EngineStore {
  private seq = 0
  readonly committer: GroupCommitter

  private constructor(private readonly db: Level<string, string>) {
    this.committer = new GroupCommitter((ops) => this.db.batch(ops, { sync: true }))
  }

  static async open(path: string): Promise<EngineStore> {
    const db = new Level<string, string>(path, { valueEncoding: 'utf8' })
    await db.open()
    return new EngineStore(db)
  }

  /** Serialised when its batch is cut (group-commit.ts), so queued changes of one run cost one put. */
  runOp(run: RunRecord): BatchOp {
    return { type: 'put', key: RUN + run.id, value: () => JSON.stringify(run) }
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

  async getRun(id: string): Promise<RunRecord | undefined> {
    const v = await this.db.get(RUN + id)
    return v === undefined ? undefined : (JSON.parse(v) as RunRecord)
  }

  async *runs(): AsyncGenerator<RunRecord> {
    for await (const v of this.db.values({ gt: RUN, lt: RUN + '\xff' })) yield JSON.parse(v) as RunRecord
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
