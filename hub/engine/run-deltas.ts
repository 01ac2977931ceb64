// A run as the engine store writes it and reads it back (hub/engine/README.md, "The history
// log"): not one record rewritten at every change but deltas appended to the log, each the run's
// small state whole with the step records and log lines that changed, the first also the run's
// head. Reading a run folds its deltas in order; retention carries an unfinished run on as one
// delta. Here too are the operations a run's checkpoint and finish hand in (`runOps`,
// `finishOps`), which compare against what was last written of the run (`Written`).
import type { RunSummary } from '../../sops/hub-engine.ts'
import type { BatchOp } from './group-commit.ts'
import {
  MAX_LOG_ENTRIES,
  type RunRecord,
  type StepRecord,
  payloadAsInput,
  startState,
} from '../../sops/run/record.ts'
import type { StoreContext } from './store-context.ts'
import { FIN, OPEN, deltaKey } from './store-layout.ts'
import type { Written } from './store-types.ts'

/** What never changes after a run is created. */
export type RunHead = Pick<RunRecord, 'id' | 'sop' | 'mode' | 'trigger' | 'createdAt' | 'admission'>
export const headOf = (run: RunRecord): RunHead => ({
  id: run.id,
  sop: run.sop,
  mode: run.mode,
  trigger: run.trigger,
  createdAt: run.createdAt,
  admission: run.admission,
})

/** What changes with the run's state: small, carried whole by every delta. */
export type RunStateRecord = Omit<
  RunRecord,
  'id' | 'mode' | 'trigger' | 'admission' | 'steps' | 'log' | 'lastOutput'
>

/**
 * One write of a run: the state record whole, the step records that changed, the log entries
 * added. Delta 0 also carries the head. A run is its deltas applied in order.
 */
export interface Delta {
  head?: RunHead
  st: RunStateRecord
  steps?: RunRecord['steps']
  log?: RunRecord['log']
}

/**
 * The state record as stored: what the head says already (`sop`, `createdAt`) and what is still
 * at its start value (sops/run/record.ts `startState`) are left out, and `fold` puts them back:
 * a seventh of a short run's bytes (2,237 → 1,927 in the peer bench), and every byte of a batch
 * is encoded on the main thread, written to the log and compacted later. Left out by being set
 * undefined on the fresh copy: JSON.stringify skips those, and the copy keeps its shape.
 */
export function storedState(st: RunStateRecord): RunStateRecord {
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
 * A step record that is settled is never changed in place: run-driver.ts gives a step a new record
 * each time it is entered (and after a restart), and only the running record is mutated. So a
 * settled record already written as the same object need not be serialised again to compare.
 */
export const settled = (rec: StepRecord): boolean => rec.status !== 'running'

/** What the store remembers of an unfinished run read back (after a restart), as if it had written it. */
export function writtenOf(run: RunRecord, deltas: number): Written {
  const steps = new Map(
    Object.entries(run.steps).map(([n, rec]) => [
      Number(n),
      { rec, json: JSON.stringify(rec), settled: settled(rec) },
    ]),
  )
  return { seq: deltas, steps, logSeq: run.logSeq }
}

/**
 * A run from its records' keys and texts, in key order; undefined when one is missing (its
 * segment dropped by retention while it was read: the run is gone) or none carries the head.
 */
export function fold(
  keys: string[],
  texts: readonly (string | undefined)[],
): { run: RunRecord; deltas: number; keys: string[] } | undefined {
  let head: RunHead | undefined
  let st: RunStateRecord | undefined
  const steps: RunRecord['steps'] = {}
  const log: RunRecord['log'] = []
  // The next delta's number: one past the last key's (retention may have folded the earlier
  // ones into record 0, so it is not their count).
  const last = keys.at(-1)
  const deltas = last === undefined ? 0 : Number.parseInt(last.slice(last.lastIndexOf('!') + 1), 36) + 1
  for (const text of texts) {
    if (text === undefined) return undefined
    const d = JSON.parse(text) as Delta
    if (d.head) head = d.head
    st = d.st
    if (d.steps) Object.assign(steps, d.steps)
    if (d.log) log.push(...d.log)
  }
  if (!head || !st) return undefined
  // Keep the same bound as the live log (record.ts: MAX_LOG_ENTRIES).
  if (log.length > MAX_LOG_ENTRIES) log.splice(0, log.length - MAX_LOG_ENTRIES)
  const lastOutput =
    st.lastFrom === null ? payloadAsInput(head.trigger.payload) : (steps[st.lastFrom]?.output ?? null)
  // A record written before `storedState` carries every field; one written since, only those set.
  return { run: { ...head, ...startState(), ...st, steps, log, lastOutput }, deltas, keys }
}

/** An unfinished run's records as one record 0, its other records gone, its marker again. */
export function carryOps(run: RunRecord, keys: readonly string[]): BatchOp[] {
  const { id: _i, mode: _m, trigger: _t, admission: _a, steps, log, lastOutput: _o, ...st } = run
  const whole: Delta = { head: headOf(run), st: storedState(structuredClone(st)), steps, log }
  return [
    ...keys.filter((k) => k !== deltaKey(run.id, 0)).map((key) => ({ type: 'del' as const, key })),
    { type: 'put', key: deltaKey(run.id, 0), value: JSON.stringify(whole) },
    { type: 'put', key: OPEN + run.id, value: '', local: true },
  ]
}

/**
 * The write that brings the stored run up to `run`: one appended delta (bench: a sync batch
 * costs by its operations and bytes, so a state change is one small put, and the bytes a run
 * writes grow linearly with its steps, not with the square). A new run also gets an `open!`
 * marker, so a restart finds unfinished runs without reading the history. The delta's JSON is
 * assembled from its parts so a changed step is serialised once (compared and written).
 */
export function runOps(ctx: StoreContext, run: RunRecord): BatchOp[] {
  const ops: BatchOp[] = []
  let w = ctx.written.get(run.id)
  const { id: _i, mode: _m, trigger: _t, admission: _a, steps, log, lastOutput: _o, ...st } = run
  let json = '{'
  const fresh = !w
  if (!w) {
    // Until retention next reads it: the first run of an empty history is the oldest.
    if (ctx.oldest === null) ctx.oldest = run.createdAt
    w = { seq: 0, steps: new Map(), logSeq: 0 }
    ctx.written.set(run.id, w)
    json += `"head":${JSON.stringify(headOf(run))},`
    // A new id: nothing wrote its marker before, so a finish before LevelDB's next write costs
    // LevelDB nothing for it (staged.ts).
    ops.push({ type: 'put', key: OPEN + run.id, value: '', local: true, fresh: true })
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
  // A new run's first record is fresh too: finished before LevelDB's next write, the run's
  // records need never reach LevelDB (store-writes.ts `indexOwn`).
  const key = deltaKey(run.id, w.seq++)
  ops.push(fresh ? { type: 'put', key, value: json, fresh: true } : { type: 'put', key, value: json })
  return ops
}

/**
 * The summary a `fin!` put of `finishOps` was made from, while the put is in flight: the write
 * path hands it to the finished runs' index without parsing back the text it was just turned
 * into (store-writes.ts `noteIndexed`).
 */
const summaries = new WeakMap<BatchOp, RunSummary>()
export const summaryOf = (op: BatchOp): RunSummary | undefined => summaries.get(op)

/**
 * With the final delta: a summary for listings, which the finished runs' index takes its entry
 * from (finished-index.ts), and the `open!` marker removed.
 */
export function finishOps(ctx: StoreContext, run: RunRecord, summary: RunSummary): BatchOp[] {
  // Only a pass of retention asks (`dropSegment`): kept while one runs, or it would hold
  // every finished run's id.
  if (ctx.pruning) ctx.finishedSince.add(run.id)
  const fin: BatchOp = { type: 'put', key: FIN + run.id, value: JSON.stringify(summary) }
  summaries.set(fin, summary)
  return [...runOps(ctx, run), fin, { type: 'del', key: OPEN + run.id, local: true }]
}
