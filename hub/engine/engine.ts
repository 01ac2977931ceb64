// The SOP runtime (sops/RUNTIME.md): admission, the step loop, approvals, durable records, restart.
// The pure rules live in sops/run/ (states, gates, routing, admission, decisions); the parts
// here sequence them against the store, the tools and the agent, and this class composes them
// as the HubEngine the hub holds:
//   context.ts     what the parts share (the runs, the kept triggers, the watchers)
//   admission.ts   trigger events in, kept triggers released (once-only.ts: once-only keys)
//   run-driver.ts  one run from start to finish (execute.ts: a step's work)
//   approvals.ts   approve and deny a parked run
//   queries.ts     what the engine answers about runs
//   restart.ts     what a start and a reopened store take up
import type { AdmissionDecision, AdmissionRecord, KeptTrigger, TriggerEvent } from '../../sops/engine-api.ts'
import type {
  ApproveOptions,
  EngineChange,
  HistoryReach,
  HubEngine,
  RunFilter,
  RunPage,
  RunResult,
  RunSummary,
} from '../../sops/hub-engine.ts'
import type { LogEntry, RunRecord } from '../../sops/run/record.ts'
import type { Sop } from '../../sops/types.ts'
import type { ToolRegistry } from '../../tools/types.ts'
import type { AgentAdapter } from '../agent/types.ts'
import { Admission } from './admission.ts'
import { approve, deny } from './approvals.ts'
import { EngineContext, silent } from './context.ts'
import { OnceOnly } from './once-only.ts'
import * as queries from './queries.ts'
import { type RestartParts, recover, reopen } from './restart.ts'
import { RunDriver } from './run-driver.ts'
import { EngineStore } from './store.ts'
import type { EngineOptions } from './types.ts'

export { ONCE_KEEP_MS } from './once-only.ts'

export class Engine implements HubEngine {
  private readonly ctx: EngineContext
  private readonly once: OnceOnly
  private readonly driver: RunDriver
  private readonly admission: Admission
  /** What a start and a reopened store hand what they read back to. */
  private readonly parts: RestartParts

  private constructor(
    private readonly store: EngineStore,
    tools: ToolRegistry,
    agent: AgentAdapter | undefined,
    opts: EngineOptions,
  ) {
    this.ctx = new EngineContext(store, tools, agent, opts)
    this.once = new OnceOnly(this.ctx)
    // A run that finishes or parks frees a slot: admission releases the SOP's kept triggers.
    this.driver = new RunDriver(this.ctx, (sop) => this.admission.release(sop))
    this.admission = new Admission(this.ctx, this.driver, this.once)
    this.parts = { driver: this.driver, admission: this.admission, once: this.once }
    this.setSops(opts.sops)
  }

  static async create(opts: EngineOptions): Promise<Engine> {
    const disk = opts.disk
    const store = await EngineStore.open(opts.dbPath, {
      ...(disk ? { onWriteError: (err: unknown) => disk.writeFailed('engine', err) } : {}),
      ...(opts.history ? { history: opts.history } : {}),
      ...(opts.now ? { now: opts.now } : {}),
      ...(opts.commitWindowMs ? { commitWindowMs: opts.commitWindowMs } : {}),
      ...(opts.stageMs ? { stageMs: opts.stageMs } : {}),
      onRebuild: (done, of) =>
        (opts.log ?? silent).info(
          { done, of },
          `index: rebuilding from the history log, segment ${done} of ${of}`,
        ),
      onMigrate: (done, of) =>
        (opts.log ?? silent).info({ done, of }, `store: moving runs into the history log, ${done} of ${of}`),
      onAheadOfLog: (applied, end) =>
        (opts.log ?? silent).warn(
          { applied, end },
          `store: the history log ends at ${end}, before ${applied}, where the index said it had read to: the disk lost bytes it had reported synced; the index is built again from what the log holds`,
        ),
      onDrop: (d) =>
        (opts.log ?? silent).info(
          d,
          `history: segment ${d.segment} dropped by retention (${d.removed} finished runs removed, ${d.carried} unfinished carried on)`,
        ),
    })
    const engine = new Engine(store, opts.tools, opts.agent, opts)
    await recover(engine.ctx, engine.parts)
    return engine
  }

  // ---- admission --------------------------------------------------------------------------

  trigger(sopName: string, event: TriggerEvent): Promise<AdmissionDecision> {
    return this.admission.trigger(sopName, event)
  }

  forgetOnce(marks: readonly { sop: string; key: string; fingerprint: string }[]): void {
    this.once.forget(marks)
  }

  setSops(sops: Sop[]): void {
    this.ctx.sops = new Map(sops.map((s) => [s.name, s]))
    for (const name of this.ctx.kept.keys()) this.admission.release(name)
  }

  // ---- approvals --------------------------------------------------------------------------

  approve(runId: string, opts: ApproveOptions = {}): Promise<RunResult> {
    return approve(this.ctx, this.driver, runId, opts)
  }

  deny(runId: string, opts: { by?: string; note?: string } = {}): Promise<RunResult> {
    return deny(this.ctx, this.driver, runId, opts)
  }

  // ---- queries ----------------------------------------------------------------------------

  pending(): RunSummary[] {
    return queries.pending(this.ctx)
  }

  liveRuns(): RunSummary[] {
    return queries.liveRuns(this.ctx)
  }

  watch(listener: (change: EngineChange) => void): () => void {
    return this.ctx.watch(listener)
  }

  getRun(runId: string): Promise<RunRecord | undefined> {
    return queries.getRun(this.ctx, runId)
  }

  async listRuns(filter: RunFilter = {}): Promise<RunSummary[]> {
    return (await this.queryRuns(filter)).runs
  }

  queryRuns(filter: RunFilter = {}): Promise<RunPage> {
    return queries.queryRuns(this.ctx, filter)
  }

  logs(runId: string): Promise<LogEntry[] | undefined> {
    return queries.logs(this.ctx, runId)
  }

  history(): HistoryReach {
    return this.store.history()
  }

  keptTriggers(): KeptTrigger[] {
    return queries.keptTriggers(this.ctx)
  }

  admissions(limit?: number): Promise<AdmissionRecord[]> {
    return this.store.admissions(limit)
  }

  // ---- the store --------------------------------------------------------------------------

  /**
   * One synced write through the group committer, for the watchdog (hub/service/): resolves
   * once the store took it, rejects when the store refuses writes.
   */
  heartbeat(): Promise<void> {
    return this.store.heartbeat()
  }

  /** Group-commit counters, for the bench. */
  get writeStats(): { batches: number; ops: number; busyMs: number } {
    return {
      batches: this.store.committer.batches,
      ops: this.store.committer.ops,
      busyMs: this.store.committer.busyMs,
    }
  }

  backupRecords(opts: { history: boolean }): AsyncIterable<[string, string]> {
    return this.store.exportRecords(opts)
  }

  /** Opens the store again after a write failed, and takes up what it holds (restart.ts `reopen`). */
  reopenStore(): Promise<void> {
    return reopen(this.ctx, this.parts)
  }

  async idle(): Promise<void> {
    const executing = this.ctx.executing
    while (executing.size > 0) await Promise.all([...executing])
    await this.store.committer.drain()
  }

  async close(): Promise<void> {
    const ctx = this.ctx
    if (ctx.closed) return
    ctx.closed = true
    this.admission.clearTimers()
    this.once.stopPruning()
    this.driver.abortAll(new Error('engine closing'))
    // Tools get the abort; one that ignores it is not waited on for ever.
    let timer: NodeJS.Timeout | undefined
    await Promise.race([Promise.all([...ctx.executing]), new Promise((r) => (timer = setTimeout(r, 2000)))])
    clearTimeout(timer)
    await this.store.close()
  }
}
