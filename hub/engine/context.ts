// What the engine's parts share (engine.ts composes them): the store, the tools and the agent,
// the unfinished runs and the SOPs they run, the kept triggers, the watchers, and the small
// bookkeeping every part does on a run (its log line, its state move, the news of it). One
// instance per engine, passed to each part; the parts never import each other's state.
import { errorText } from '../../errors/text.ts'
import type { KeptTrigger } from '../../sops/engine-api.ts'
import type { EngineChange } from '../../sops/hub-engine.ts'
import type { AdmissionView } from '../../sops/run/admission.ts'
import { type LogEntry, type RunRecord, appendLog } from '../../sops/run/record.ts'
import { type RunEvent, transition } from '../../sops/run/states.ts'
import type { Sop } from '../../sops/types.ts'
import type { ToolRegistry } from '../../tools/types.ts'
import type { AgentAdapter } from '../agent/types.ts'
import type { Log } from '../log.ts'
import { LiveRuns } from './live-runs.ts'
import type { EngineStore } from './store.ts'
import { summary } from './summary.ts'
import type { EngineOptions } from './types.ts'

export const silent: Log = { info() {}, warn() {}, error() {} }

export class EngineContext {
  sops = new Map<string, Sop>()
  /** Unfinished runs (active and parked); finished ones live only in the store. */
  readonly live = new LiveRuns()
  /**
   * Runs finished whose final record is not on disk yet (it waits for the next sync, up to
   * DEFER_MS): reads are answered from here meanwhile, so nobody sees the run as it was stored
   * at its admission after its output has gone out.
   */
  readonly finishing = new Map<string, RunRecord>()
  /** The SOP object each live run started with: a reload does not change a run mid-flight. */
  readonly runSop = new Map<string, Sop>()
  /** Deferred and held triggers by SOP, oldest first (admission.ts releases them). */
  readonly kept = new Map<string, KeptTrigger[]>()
  lastFinished = new Map<string, number>()
  /** Run drivers and releases under way: idle() and close() wait for them. */
  readonly executing = new Set<Promise<void>>()
  readonly watchers = new Set<(change: EngineChange) => void>()
  /** Runs whose current step may have been under way when the hub last stopped (ToolContext.repeat). */
  readonly repeating = new Set<string>()
  closed = false
  /** The disk guard (hub/disk/), when the hub has one. */
  readonly disk: EngineOptions['disk']
  readonly now: () => number
  readonly log: Log

  constructor(
    readonly store: EngineStore,
    readonly tools: ToolRegistry,
    readonly agent: AgentAdapter | undefined,
    opts: EngineOptions,
  ) {
    this.now = opts.now ?? Date.now
    this.log = opts.log ?? silent
    this.disk = opts.disk
  }

  note(run: RunRecord, step: number, level: LogEntry['level'], msg: string): void {
    appendLog(run, { at: this.now(), step, level, msg })
    // The run's own log has every line; the hub's log gets its routine ones at debug only (a
    // line per step per run was a measurable share of the hub's CPU).
    if (level === 'info') this.log.debug?.({ run: run.id, sop: run.sop, step }, msg)
    else this.log[level]({ run: run.id, sop: run.sop, step }, msg)
  }

  watch(listener: (change: EngineChange) => void): () => void {
    this.watchers.add(listener)
    return () => {
      this.watchers.delete(listener)
    }
  }

  changed(change: EngineChange): void {
    for (const w of this.watchers) {
      try {
        w(change)
      } catch (err) {
        this.log.error({ err: errorText(err) }, 'engine watcher failed')
      }
    }
  }

  runChanged(run: RunRecord): void {
    if (this.watchers.size > 0) this.changed({ kind: 'run', run: summary(run) })
  }

  move(run: RunRecord, event: RunEvent): void {
    const t = transition(run.state, event)
    // A refused transition is a bug in the engine, never something a caller can cause.
    if (!t.ok) throw new Error(`run ${run.id}: ${t.error}`)
    const from = run.state
    run.state = t.state
    run.updatedAt = this.now()
    this.live.moved(run, from)
  }

  /** This SOP's runs as admission reads them (sops/run/admission.ts). */
  view(sop: string): AdmissionView {
    const { active, parked } = this.live.slots(sop)
    const last = this.lastFinished.get(sop)
    return { active, parked, now: this.now(), ...(last !== undefined ? { lastFinishedAt: last } : {}) }
  }

  keptFor(sop: string): KeptTrigger[] {
    let q = this.kept.get(sop)
    if (!q) this.kept.set(sop, (q = []))
    return q
  }

  /** A run driver or release under way, until it settles. */
  track(p: Promise<void>): void {
    this.executing.add(p)
    void p.finally(() => this.executing.delete(p))
  }
}
