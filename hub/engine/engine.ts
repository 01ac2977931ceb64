// The SOP runtime (issue 3): admission, the step loop, approvals, durable records, restart.
// The pure rules live in sops/run/ (states, gates, routing, admission, decisions); this file
// sequences them against the store, the tools and the agent.
import { randomUUID } from 'node:crypto'
import { type Condition, evaluate, parseCondition } from '../../sops/conditions.ts'
import type { AdmissionDecision, AdmissionRecord, KeptTrigger, TriggerEvent } from '../../sops/engine-api.ts'
import type {
  ApproveOptions,
  EngineChange,
  HubEngine,
  RunFilter,
  RunPage,
  RunResult,
  RunSummary,
  HistoryReach,
} from '../../sops/hub-engine.ts'
import { admit, cooldownLeft, mayRelease, type AdmissionVerdict } from '../../sops/run/admission.ts'
import { planDecisions } from '../../sops/run/decisions.ts'
import { effectiveMode, gateBefore } from '../../sops/run/gates.ts'
import {
  type LogEntry,
  MAX_COALESCED_KEPT,
  type RunRecord,
  type StepRecord,
  appendLog,
  newRun,
  payloadAsInput,
} from '../../sops/run/record.ts'
import {
  type GuardContext,
  MAX_VISITS,
  type Route,
  firstStep,
  routeAfterComplete,
  routeAfterFailure,
  routeAfterSkip,
  skipReason,
  stepByNumber,
} from '../../sops/run/routing.ts'
import { holdsSlot, isParked, type RunEvent, transition } from '../../sops/run/states.ts'
import type { Json, Sop, Step } from '../../sops/types.ts'
import type { ToolRegistry } from '../../tools/types.ts'
import type { AgentAdapter } from '../agent/types.ts'
import { callTool, runPlannedCalls, toolRefusal } from './calls.ts'
import { contractProblem } from './contracts.ts'
import type { BatchOp } from './group-commit.ts'
import { LiveRuns } from './live-runs.ts'
import { EngineStore } from './store.ts'
import { OnceMarks, onceKey } from './once-marks.ts'
import { summary } from './summary.ts'
import type { EngineOptions } from './types.ts'
import type { Log } from '../log.ts'
import { DiskRefusal, isStoreIoError } from '../disk/errors.ts'

const silent: Log = { info() {}, warn() {}, error() {} }

export class Engine implements HubEngine {
  private sops = new Map<string, Sop>()
  /** Unfinished runs (active and parked); finished ones live only in the store. */
  private live = new LiveRuns()
  /**
   * Runs finished whose final record is not on disk yet (it waits for the next sync, up to
   * DEFER_MS): reads are answered from here meanwhile, so nobody sees the run as it was stored
   * at its admission after its output has gone out.
   */
  private finishing = new Map<string, RunRecord>()
  /** The SOP object each live run started with: a reload does not change a run mid-flight. */
  private runSop = new Map<string, Sop>()
  private kept = new Map<string, KeptTrigger[]>()
  private lastFinished = new Map<string, number>()
  private executing = new Set<Promise<void>>()
  private aborts = new Map<string, AbortController>()
  private timers = new Map<string, NodeJS.Timeout>()
  private conditions = new Map<string, Condition | null>()
  private triggerInputs = new WeakMap<RunRecord, Json>()
  /** Once-only admissions in progress, by key: a second event with the key waits for the first. */
  private onceBusy = new Map<string, Promise<void>>()
  /**
   * Fingerprinted once-only marks not yet forgotten (engine-api: `once.fingerprint`), by key, the
   * few latest each: a broker may have two events in flight under one key (Aedes numbers a
   * reconnected session's new deliveries without looking at the packet ids of those it replays).
   */
  private marks = new OnceMarks()
  private pruneTimer: NodeJS.Timeout | undefined
  private watchers = new Set<(change: EngineChange) => void>()
  /** Runs whose current step may have been under way when the hub last stopped (ToolContext.repeat). */
  private repeating = new Set<string>()
  private closed = false
  /** The disk guard (hub/disk/), when the hub has one. */
  private readonly disk: EngineOptions['disk']
  /** SOPs whose kept triggers wait for the disk to have room before they are released. */
  private releaseLater = new Set<string>()
  /** Kept triggers released whose removal from the store is not written yet. */
  private unkeeping = new Set<string>()
  private readonly now: () => number
  private readonly log: Log

  private constructor(
    private readonly store: EngineStore,
    private readonly tools: ToolRegistry,
    private readonly agent: AgentAdapter | undefined,
    opts: EngineOptions,
  ) {
    this.now = opts.now ?? Date.now
    this.log = opts.log ?? silent
    this.disk = opts.disk
    this.setSops(opts.sops)
  }

  static async create(opts: EngineOptions): Promise<Engine> {
    const disk = opts.disk
    const store = await EngineStore.open(opts.dbPath, {
      ...(disk ? { onWriteError: (err: unknown) => disk.writeFailed('engine', err) } : {}),
      ...(opts.history ? { history: opts.history } : {}),
      ...(opts.now ? { now: opts.now } : {}),
      ...(opts.commitWindowMs ? { commitWindowMs: opts.commitWindowMs } : {}),
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
    await engine.recover()
    return engine
  }

  // ---- conditions -------------------------------------------------------------------------

  private parsed(src: string): Condition | null {
    let c = this.conditions.get(src)
    if (c === undefined) {
      const p = parseCondition(src)
      c = p.ok ? p.condition : null
      if (this.conditions.size < 10_000) this.conditions.set(src, c)
    }
    return c
  }

  private readonly evalCond = (src: string, payload: Json): boolean => {
    const c = this.parsed(src)
    return c !== null && evaluate(c, payload)
  }

  private isCondition(src: string): boolean {
    return src.trim() !== '' && this.parsed(src) !== null
  }

  // ---- bookkeeping ------------------------------------------------------------------------

  private note(run: RunRecord, step: number, level: LogEntry['level'], msg: string): void {
    appendLog(run, { at: this.now(), step, level, msg })
    // The run's own log has every line; the hub's log gets its routine ones at debug only (a
    // line per step per run was a measurable share of the hub's CPU).
    if (level === 'info') this.log.debug?.({ run: run.id, sop: run.sop, step }, msg)
    else this.log[level]({ run: run.id, sop: run.sop, step }, msg)
  }

  private changed(change: EngineChange): void {
    for (const w of this.watchers) {
      try {
        w(change)
      } catch (err) {
        this.log.error({ err: err instanceof Error ? err.message : String(err) }, 'engine watcher failed')
      }
    }
  }

  private runChanged(run: RunRecord): void {
    if (this.watchers.size > 0) this.changed({ kind: 'run', run: summary(run) })
  }

  private move(run: RunRecord, event: RunEvent): void {
    const t = transition(run.state, event)
    // A refused transition is a bug in the engine, never something a caller can cause.
    if (!t.ok) throw new Error(`run ${run.id}: ${t.error}`)
    const from = run.state
    run.state = t.state
    run.updatedAt = this.now()
    this.live.moved(run, from)
  }

  private view(sop: string) {
    const { active, parked } = this.live.slots(sop)
    const last = this.lastFinished.get(sop)
    return { active, parked, now: this.now(), ...(last !== undefined ? { lastFinishedAt: last } : {}) }
  }

  /** The admission record, and the event's once-only mark in the same batch (engine-api: `once`). */
  private admissionOps(sop: string, event: TriggerEvent, d: AdmissionDecision): BatchOp[] {
    const rec: AdmissionRecord = { sop, at: this.now(), source: event.source, ...d }
    const ops = [this.store.admissionOp(rec)]
    const once = event.once
    if (once?.fingerprint !== undefined)
      ops.push(this.store.markOp(onceKey(sop, once.key), this.marks.with(sop, once.key, once.fingerprint, d)))
    else if (once) ops.push(...this.store.onceOps(onceKey(sop, once.key), d, rec.at))
    return ops
  }

  private spawn(run: RunRecord): void {
    const p = this.drive(run).catch((err: unknown) => {
      this.log.error(
        { run: run.id, err: err instanceof Error ? err.message : String(err) },
        'run driver crashed',
      )
    })
    this.executing.add(p)
    void p.finally(() => this.executing.delete(p))
  }

  // ---- admission --------------------------------------------------------------------------

  /**
   * A once-only event (engine-api: `once`) is admitted at most once per SOP and key: events with
   * the same key wait for each other, and a closed engine throws rather than answer "dropped",
   * so its source does not take an unrecorded decision for a recorded one.
   */
  async trigger(sopName: string, event: TriggerEvent): Promise<AdmissionDecision> {
    // Below the disk's reserve no new work is taken (hub/disk/): refused before anything is
    // written, so the source keeps the event (no PUBACK) until there is room.
    const refusal = this.disk?.refusal() ?? null
    const why = refusal === null || typeof refusal === 'string' ? refusal : await refusal
    if (why !== null) throw new DiskRefusal(why)
    // A malformed event (not even an object) is refused by admitEvent with its reason, not thrown here.
    const once = (event as TriggerEvent | null | undefined)?.once
    if (!once) return this.admitEvent(sopName, event)
    const key = onceKey(sopName, once.key)
    const fp = once.fingerprint
    const result = (this.onceBusy.get(key) ?? Promise.resolve()).then(async () => {
      if (this.closed) throw new Error('the engine is closed')
      if (once.check) {
        if (fp !== undefined) {
          const prior = this.marks.decision(sopName, once.key, fp)
          if (prior !== undefined) return { ...prior, duplicate: true as const }
        } else {
          const prior = await this.store.onceDecision(key)
          if (prior) return { ...prior, duplicate: true as const }
        }
      }
      const d = await this.admitEvent(sopName, event)
      // Stored with the admission (admissionOps); remembered once that write is through.
      if (fp !== undefined && !this.closed)
        this.marks.set(sopName, once.key, this.marks.with(sopName, once.key, fp, d))
      return d
    })
    const settled = result.then(
      () => {},
      () => {},
    )
    this.onceBusy.set(key, settled)
    void settled.then(() => {
      if (this.onceBusy.get(key) === settled) this.onceBusy.delete(key)
    })
    return result
  }

  private async admitEvent(sopName: string, event: TriggerEvent): Promise<AdmissionDecision> {
    if (this.closed) return { outcome: 'dropped', reason: 'the engine is closed' }
    // Again, with nothing awaited between here and the write: a once-only event may have waited
    // for its key (and the disk guard read the disk) since trigger() asked.
    const disk = this.disk
    if (disk?.refusing()) throw new DiskRefusal((disk.refusal() as string | null) ?? 'the disk is full')
    const bad = badEvent(event)
    if (bad) return { outcome: 'dropped', reason: `bad trigger event: ${bad}` }
    const sop = this.sops.get(sopName)
    if (!sop) {
      const d: AdmissionDecision = { outcome: 'dropped', reason: `no SOP named "${sopName}" is loaded` }
      await this.store.write(this.admissionOps(sopName, event, d))
      return d
    }
    const verdict: AdmissionVerdict = admit(sop, this.view(sop.name))
    switch (verdict.outcome) {
      case 'started': {
        const run = this.createRun(sop, event, 'started')
        const d: AdmissionDecision = { outcome: 'started', runId: run.id, reason: verdict.reason }
        try {
          await this.store.write([...this.store.runOps(run), ...this.admissionOps(sop.name, event, d)])
        } catch (err) {
          // Never stored, so it never was: it must not hold a slot until the next restart.
          this.live.delete(run.id)
          this.runSop.delete(run.id)
          throw err
        }
        this.runChanged(run)
        if (!this.closed) this.spawn(run)
        return d
      }
      case 'deferred':
      case 'held': {
        const kept: KeptTrigger = {
          key: this.store.newKeptKey(this.now()),
          sop: sop.name,
          kind: verdict.outcome,
          event,
          reason: verdict.reason,
          at: this.now(),
        }
        const q = this.keptFor(sop.name)
        q.push(kept)
        const d: AdmissionDecision = { outcome: verdict.outcome, reason: verdict.reason }
        try {
          await this.store.write([this.store.keptOp(kept), ...this.admissionOps(sop.name, event, d)])
        } catch (err) {
          const at = q.indexOf(kept)
          if (at >= 0) q.splice(at, 1)
          throw err
        }
        this.changed({ kind: 'kept', sop: sop.name })
        return d
      }
      case 'coalesced': {
        const into = [...this.live.values()].filter((r) => r.sop === sop.name && holdsSlot(r.state)).pop()
        if (!into) return { outcome: 'dropped', reason: 'coalesce: no run in flight to fold into' }
        into.coalesced.push(event)
        into.coalescedCount++
        if (into.coalesced.length > MAX_COALESCED_KEPT) into.coalesced.shift()
        this.note(into, 0, 'info', `coalesced a ${event.type} trigger from ${event.source}`)
        const d: AdmissionDecision = { outcome: 'coalesced', runId: into.id, reason: verdict.reason }
        await this.store.write([...this.store.runOps(into), ...this.admissionOps(sop.name, event, d)])
        this.runChanged(into)
        return d
      }
      default: {
        const d: AdmissionDecision = { outcome: verdict.outcome, reason: verdict.reason }
        await this.store.write(this.admissionOps(sop.name, event, d))
        return d
      }
    }
  }

  private keptFor(sop: string): KeptTrigger[] {
    let q = this.kept.get(sop)
    if (!q) this.kept.set(sop, (q = []))
    return q
  }

  private createRun(sop: Sop, event: TriggerEvent, admission: RunRecord['admission']): RunRecord {
    const first = firstStep(sop)
    const run = newRun({
      id: randomUUID(),
      sop: sop.name,
      mode: sop.executionMode,
      trigger: event,
      first: first.kind === 'step' ? first.step : null,
      now: this.now(),
      admission,
    })
    if (first.kind === 'step') this.enter(run, first.step)
    this.live.add(run)
    this.runSop.set(run.id, sop)
    return run
  }

  /** Starts kept triggers that may run now (a slot freed, a run finished, a cooldown ended). */
  private release(sopName: string): void {
    if (this.closed) return
    // A kept trigger is new work too: it waits for room with the rest.
    const disk = this.disk
    if (disk?.refusing()) {
      if (!this.releaseLater.has(sopName)) {
        this.releaseLater.add(sopName)
        void disk.room().then(() => {
          this.releaseLater.delete(sopName)
          this.release(sopName)
        })
      }
      return
    }
    const sop = this.sops.get(sopName)
    const q = this.kept.get(sopName)
    if (!sop || !q || q.length === 0) return
    while (q.length > 0) {
      const head = q[0]!
      const view = this.view(sopName)
      if (!mayRelease(sop, head.kind, view)) {
        const left = cooldownLeft(sop, view)
        if (left > 0 && !this.timers.has(sopName)) {
          const t = setTimeout(() => {
            this.timers.delete(sopName)
            this.release(sopName)
          }, left + 1)
          t.unref()
          this.timers.set(sopName, t)
        }
        return
      }
      q.shift()
      const run = this.createRun(sop, head.event, 'started')
      const d: AdmissionDecision = {
        outcome: 'started',
        runId: run.id,
        reason: `released: was ${head.kind} (${head.reason})`,
      }
      this.note(run, 0, 'info', d.reason)
      // Still kept in the store until this write lands: a reopen meanwhile must not keep it again.
      this.unkeeping.add(head.key)
      const write = this.durable(run.id, [
        this.store.unkeepOp(head.key),
        ...this.store.runOps(run),
        ...this.admissionOps(sopName, head.event, d),
      ]).finally(() => this.unkeeping.delete(head.key))
      const p = write
        .then(() => {
          this.changed({ kind: 'kept', sop: sopName })
          this.runChanged(run)
          return this.closed ? undefined : this.drive(run)
        })
        .catch((err: unknown) => {
          this.log.error(
            { run: run.id, err: err instanceof Error ? err.message : String(err) },
            'run driver crashed',
          )
        })
      this.executing.add(p)
      void p.finally(() => this.executing.delete(p))
    }
  }

  // ---- the step loop ----------------------------------------------------------------------

  /** Routing reached step n: count the visit and reset its attempt (SOP-NOTES: 256-visit cap). */
  private enter(run: RunRecord, n: number): void {
    const prev = run.steps[n]
    const rec: StepRecord = {
      number: n,
      status: 'running',
      visits: (prev?.visits ?? 0) + 1,
      attempts: 0,
      calls: [],
    }
    run.steps[n] = rec
    run.current = n
    run.passedGates = run.passedGates.filter((g) => g !== n)
  }

  private guardContext(run: RunRecord): GuardContext {
    const steps: Record<string, Json> = {}
    for (const [k, s] of Object.entries(run.steps))
      if (s.status === 'completed' && s.output !== undefined) steps[k] = s.output
    return { steps, trigger: this.triggerInput(run), decisions: run.decisions }
  }

  /**
   * The trigger payload as steps read it (`$.trigger`, `{{trigger…}}`), parsed once per run: the
   * guards before and after each step and its calls all read it.
   */
  private triggerInput(run: RunRecord): Json {
    let v = this.triggerInputs.get(run)
    if (v === undefined) {
      v = payloadAsInput(run.trigger.payload)
      this.triggerInputs.set(run, v)
    }
    return v
  }

  private stepOutputs(run: RunRecord): Record<number, Json> {
    const out: Record<number, Json> = {}
    for (const [k, s] of Object.entries(run.steps))
      if (s.status === 'completed' && s.output !== undefined) out[Number(k)] = s.output
    return out
  }

  private async persist(run: RunRecord, extra: BatchOp[] = []): Promise<void> {
    run.updatedAt = this.now()
    await this.durable(run.id, [...this.store.runOps(run), ...extra])
    this.runChanged(run)
  }

  /**
   * A running run's checkpoint waits out a disk that cannot take it (full, or failing) rather
   * than abandoning the run: what its step did has happened, so its record must land, and the
   * run keeps its slot meanwhile. It resumes by itself once the write goes through. Admission
   * writes are not retried: a trigger the store cannot take is refused, and its source told so.
   */
  private async durable(runId: string, ops: BatchOp[], opts: { defer?: boolean } = {}): Promise<void> {
    let wait = 100
    for (let tries = 0; ; tries++) {
      try {
        await this.store.write(ops, opts)
        // With a disk guard, the guard says once for every run that the store failed and is back.
        if (tries > 0)
          this.log[this.disk ? 'debug' : 'info']?.(
            { run: runId, tries: tries + 1 },
            'run checkpoint written; the run goes on',
          )
        return
      } catch (err) {
        if (this.closed || !isStoreIoError(err)) throw err
        if (tries === 0)
          this.log[this.disk ? 'debug' : 'error']?.(
            { run: runId, err: (err as Error).message },
            'cannot write the run checkpoint (disk full?); retrying until it can',
          )
        await new Promise((r) => setTimeout(r, wait).unref())
        wait = Math.min(wait * 2, 5000)
      }
    }
  }

  private async finish(run: RunRecord, how: 'end' | 'fail' | 'deny' | 'cancel', why: string): Promise<void> {
    this.move(run, how)
    run.finishedAt = this.now()
    run.current = null
    delete run.gate
    if (how === 'end') this.note(run, 0, 'info', `completed: ${why}`)
    else {
      run.error = why
      this.note(run, 0, how === 'fail' ? 'error' : 'warn', `${run.state}: ${why}`)
    }
    this.lastFinished.set(run.sop, run.finishedAt)
    this.live.delete(run.id)
    this.runSop.delete(run.id)
    this.aborts.delete(run.id)
    run.updatedAt = this.now()
    // Deferred (group-commit.ts): no side effect waits for a finished run's record. It is handed
    // to the group commit before the SOP's kept triggers are released, so their admissions are
    // stored after it, in its batch or a later one. The news of it waits for it (EngineChange:
    // told once durable), for as long as the group commit holds it (DEFER_MS, longer while
    // events come steadily). A kill before it lands re-runs the last step on restart, marked as
    // a possible repeat, as a kill during that step would.
    this.finishing.set(run.id, run)
    const stored = this.durable(
      run.id,
      [...this.store.finishOps(run, summary(run)), this.store.lastFinishedOp(run.sop, run.finishedAt)],
      { defer: true },
    )
    this.release(run.sop)
    try {
      await stored
    } finally {
      this.finishing.delete(run.id)
    }
    this.runChanged(run)
    this.store.forget(run.id)
  }

  private async applyRoute(run: RunRecord, route: Route): Promise<void> {
    if (route.kind === 'end') return this.finish(run, 'end', route.reason)
    if (route.kind === 'fail') return this.finish(run, 'fail', route.error)
    const rec = run.steps[route.step]
    if ((rec?.visits ?? 0) >= MAX_VISITS) {
      return this.finish(run, 'fail', `step ${route.step} was visited more than ${MAX_VISITS} times`)
    }
    this.enter(run, route.step)
    await this.persist(run)
  }

  /** Parks the run at a gate; the slot it held frees for deferred triggers (SOP-NOTES: admission). */
  private async park(run: RunRecord, gate: NonNullable<RunRecord['gate']>): Promise<void> {
    this.move(run, gate.kind === 'checkpoint' ? 'checkpoint' : 'gate')
    run.gate = gate
    this.note(run, gate.step, 'info', `waiting for approval before step ${gate.step}: ${gate.reason}`)
    await this.persist(run)
    this.release(run.sop)
  }

  private async startRun(run: RunRecord, sop: Sop): Promise<boolean> {
    const deterministic = effectiveMode(sop, undefined) === 'deterministic'
    const trigger = run.trigger.payload as Json
    const plan = planDecisions(sop, {
      deterministic,
      hasAgent: this.agent !== undefined,
      trigger,
      isCondition: (q) => this.isCondition(q),
      evalCond: this.evalCond,
    })
    let changed = false
    for (const d of plan.decided) {
      run.decisions[d.step] = d.value
      run.decidedBy[d.step] = d.by
      this.note(
        run,
        d.step,
        'info',
        `decide: "${stepByNumber(sop, d.step)?.decide ?? ''}" → ${d.value ? 'yes' : 'no'} (${d.by})`,
      )
      changed = true
    }
    for (const q of plan.agent) {
      const ac = this.abortFor(run)
      const ans = await this.agent!.decide({
        sop: { name: sop.name, description: sop.description },
        question: q.question,
        trigger: run.trigger,
        ...agentAlias(sop, stepByNumber(sop, q.step)),
        signal: ac.signal,
      })
      if (this.closed) return false
      if (!ans.ok) {
        await this.finish(
          run,
          'fail',
          `step ${q.step}: the agent could not answer decide: "${q.question}": ${ans.error}`,
        )
        return false
      }
      run.decisions[q.step] = ans.value
      run.decidedBy[q.step] = 'agent'
      this.note(run, q.step, 'info', `decide: "${q.question}" → ${ans.value ? 'yes' : 'no'} (agent)`)
      changed = true
    }
    this.move(run, 'start')
    if (plan.operator.length > 0 && run.current !== null) {
      const step = stepByNumber(sop, run.current)!
      const own = gateBefore(sop, step, run)
      const gate = own ?? {
        step: step.number,
        kind: 'decision' as const,
        operatorOnly: true,
        reason: 'questions for the operator (no agent configured and not written as a condition)',
      }
      // Questions only the operator can answer make the gate operator-only, whatever its kind.
      await this.park(run, { ...gate, operatorOnly: true, questions: plan.operator, since: this.now() })
      return false
    }
    if (changed) await this.persist(run)
    return true
  }

  private abortFor(run: RunRecord): AbortController {
    let ac = this.aborts.get(run.id)
    if (!ac) {
      ac = new AbortController()
      // Asked for after close() aborted the others: it is aborted too.
      if (this.closed) ac.abort(new Error('engine closing'))
      else this.aborts.set(run.id, ac)
    }
    return ac
  }

  private async drive(run: RunRecord): Promise<void> {
    const sop = this.runSop.get(run.id) ?? this.sops.get(run.sop)
    if (!sop) return this.finish(run, 'fail', `SOP "${run.sop}" is no longer loaded`)
    this.runSop.set(run.id, sop)
    if (run.state === 'pending') {
      if (!(await this.startRun(run, sop))) return
    }
    while (run.state === 'running' && !this.closed) {
      if (run.current === null) return this.finish(run, 'end', 'no step left')
      const step = stepByNumber(sop, run.current)
      if (!step) return this.finish(run, 'fail', `step ${run.current} does not exist in SOP "${sop.name}"`)
      const rec =
        run.steps[step.number] ??
        (run.steps[step.number] = {
          number: step.number,
          status: 'running',
          visits: 1,
          attempts: 0,
          calls: [],
        })

      // `when:` is not a skip: it is read after the step runs, in routeAfterComplete (SOP-NOTES: Runs).
      const ctx = this.guardContext(run)
      const skip = skipReason(step, ctx, (n) => run.steps[n]?.status === 'completed')
      if (skip !== null) {
        rec.status = 'skipped'
        rec.reason = skip
        this.note(run, step.number, 'info', `skipped: ${skip}`)
        await this.applyRoute(run, routeAfterSkip(sop, step))
        continue
      }

      const gate = gateBefore(sop, step, run)
      if (gate) return this.park(run, { ...gate, since: this.now() })

      const input = run.lastOutput
      rec.input = input
      if (step.input) {
        const bad = contractProblem(step.input, input)
        if (bad !== null) {
          rec.status = 'failed'
          rec.error = `input contract: ${bad}`
          // Retrying cannot change the input, so a failing input contract fails the run (SOP-NOTES).
          return this.finish(
            run,
            'fail',
            `step ${step.number}: input does not match its input contract: ${bad}`,
          )
        }
      }

      rec.startedAt = this.now()
      delete rec.endedAt
      const result = await this.execute(run, sop, step, input)
      if (this.closed) return
      rec.endedAt = this.now()
      let outcome = result
      if (outcome.ok && step.output) {
        const bad = contractProblem(step.output, outcome.output)
        if (bad !== null)
          outcome = {
            ok: false,
            error: `output does not match its output contract: ${bad}`,
            calls: outcome.calls,
          }
      }
      rec.calls = outcome.calls
      if (outcome.ok) {
        rec.status = 'completed'
        rec.output = outcome.output
        delete rec.error
        run.lastOutput = outcome.output
        run.lastFrom = step.number
        run.passedGates = run.passedGates.filter((g) => g !== step.number)
        this.note(run, step.number, 'info', `completed: ${step.title}`)
        await this.applyRoute(run, routeAfterComplete(sop, step, this.guardContext(run), this.evalCond))
        continue
      }
      rec.attempts++
      rec.error = outcome.error
      this.note(run, step.number, 'warn', `attempt ${rec.attempts} failed: ${outcome.error}`)
      const fr = routeAfterFailure(sop, step, rec.attempts, outcome.error)
      if (fr.kind === 'retry') {
        await this.persist(run)
        continue
      }
      rec.status = 'failed'
      run.passedGates = run.passedGates.filter((g) => g !== step.number)
      await this.applyRoute(run, fr)
    }
  }

  private async execute(
    run: RunRecord,
    sop: Sop,
    step: Step,
    input: Json,
  ): Promise<{ ok: true; output: Json; calls: Json[] } | { ok: false; error: string; calls: Json[] }> {
    const abortFor = () => this.abortFor(run)
    const scope = {
      runId: run.id,
      sop: sop.name,
      step,
      steps: this.stepOutputs(run),
      trigger: this.triggerInput(run),
      ...(this.repeating.delete(run.id) ? { repeat: true } : {}),
      // Made when a tool first reads it (most never do; an AbortController per run was 2% of a
      // short run's CPU).
      get signal() {
        return abortFor().signal
      },
    }
    if (step.calls.length > 0) return runPlannedCalls(this.tools, scope)
    const mode = effectiveMode(sop, step)
    if (mode === 'deterministic') {
      // A checkpoint with no call passes its input through; any other step needs a call (SOP-NOTES: Runs).
      if (step.kind === 'checkpoint') return { ok: true, output: input, calls: [] }
      return {
        ok: false,
        error: `step ${step.number} has no call: and a deterministic run makes no model round-trips`,
        calls: [],
      }
    }
    if (!this.agent) return { ok: false, error: 'no agent configured', calls: [] }
    const offered = [...this.tools.values()].filter(
      (t) => toolRefusal(step, t.name) === null && (step.tools.length === 0 || step.tools.includes(t.name)),
    )
    let k = 0
    const calls: Json[] = []
    const r = await this.agent.runStep({
      sop: { name: sop.name, description: sop.description },
      step: {
        number: step.number,
        title: step.title,
        body: step.body,
        ...(step.prompt !== undefined ? { prompt: step.prompt } : {}),
      },
      ...agentAlias(sop, step),
      input,
      tools: offered.map((t) => ({ name: t.name, description: t.description, parameters: t.schema })),
      callTool: async (name, args) => {
        const res = await callTool(this.tools, scope, k++, name, args)
        if (res.ok) calls.push(res.output)
        this.note(
          run,
          step.number,
          res.ok ? 'info' : 'warn',
          `agent called ${name}: ${res.ok ? 'ok' : res.error}`,
        )
        return res
      },
      signal: scope.signal,
    })
    return r.ok ? { ok: true, output: r.value, calls } : { ok: false, error: `agent: ${r.error}`, calls }
  }

  // ---- approvals --------------------------------------------------------------------------

  async approve(runId: string, opts: ApproveOptions = {}): Promise<RunResult> {
    const run = this.live.get(runId)
    const bad = (await this.notWaiting(runId, run)) ?? this.stillWaiting(runId, run)
    if (bad) return bad
    const gate = run!.gate!
    if (opts.via === 'agent' && gate.operatorOnly) {
      // SOP-NOTES: no tool call or agent reply passes such a gate; the request is kept for the operator.
      const req = {
        by: opts.by ?? 'agent',
        ...(opts.note !== undefined ? { note: opts.note } : {}),
        at: this.now(),
      }
      gate.requests = [...(gate.requests ?? []), req]
      this.note(
        run!,
        gate.step,
        'info',
        `approval requested by ${req.by}; the gate needs an operator (${gate.reason})`,
      )
      await this.persist(run!)
      return {
        ok: false,
        error: `run ${runId} waits at step ${gate.step} for an operator (${gate.reason}); the request is recorded, approve it with \`svc sop approve ${runId}\``,
      }
    }
    const answers: Record<string, boolean> = {}
    for (const q of gate.questions ?? []) {
      const a = opts.decisions?.[q.step] ?? opts.decisions?.[String(q.step) as unknown as number]
      if (typeof a !== 'boolean') {
        return {
          ok: false,
          error: `run ${runId} needs an answer to step ${q.step}'s question "${q.question}" (decisions: { "${q.step}": true|false })`,
        }
      }
      answers[q.step] = a
    }
    const r = run!
    for (const [k, v] of Object.entries(answers)) {
      r.decisions[k] = v
      r.decidedBy[k] = `operator ${opts.by ?? 'operator'}`
      this.note(r, Number(k), 'info', `decide: answered ${v ? 'yes' : 'no'} by ${opts.by ?? 'operator'}`)
    }
    r.approvals.push({
      step: gate.step,
      kind: gate.kind,
      decision: 'approved',
      by: opts.by ?? 'operator',
      ...(opts.note !== undefined ? { note: opts.note } : {}),
      at: this.now(),
    })
    if (gate.kind !== 'decision') r.passedGates.push(gate.step)
    r.runApproved = true
    delete r.gate
    this.move(r, 'approve')
    this.note(
      r,
      gate.step,
      'info',
      `approved by ${opts.by ?? 'operator'}${opts.note ? `: ${opts.note}` : ''}`,
    )
    await this.persist(r)
    if (!this.closed) this.spawn(r)
    return { ok: true, run: r }
  }

  async deny(runId: string, opts: { by?: string; note?: string } = {}): Promise<RunResult> {
    const run = this.live.get(runId)
    const bad = (await this.notWaiting(runId, run)) ?? this.stillWaiting(runId, run)
    if (bad) return bad
    const r = run!
    const gate = r.gate!
    r.approvals.push({
      step: gate.step,
      kind: gate.kind,
      decision: 'denied',
      by: opts.by ?? 'operator',
      ...(opts.note !== undefined ? { note: opts.note } : {}),
      at: this.now(),
    })
    await this.finish(
      r,
      'deny',
      `denied by ${opts.by ?? 'operator'} before step ${gate.step}${opts.note ? `: ${opts.note}` : ''}`,
    )
    return { ok: true, run: r }
  }

  /** Synchronous re-check after an await: a concurrent approve/deny may have moved the run meanwhile. */
  private stillWaiting(runId: string, run: RunRecord | undefined): RunResult | null {
    return run && isParked(run.state) && run.gate
      ? null
      : { ok: false, error: `run ${runId} is not waiting for approval (it is ${run?.state ?? 'gone'})` }
  }

  private async notWaiting(runId: string, run: RunRecord | undefined): Promise<RunResult | null> {
    if (typeof runId !== 'string' || runId === '') return { ok: false, error: 'run id is missing' }
    if (run && isParked(run.state) && run.gate) return null
    const stored = run ?? this.finishing.get(runId) ?? (await this.store.getRun(runId))
    if (!stored) return { ok: false, error: `no run with id "${runId}"` }
    return { ok: false, error: `run ${runId} is not waiting for approval (it is ${stored.state})` }
  }

  // ---- queries ----------------------------------------------------------------------------

  pending(): RunSummary[] {
    return [...this.live.values()]
      .filter((r) => isParked(r.state))
      .map(summary)
      .sort((a, b) => a.createdAt - b.createdAt)
  }

  liveRuns(): RunSummary[] {
    return [...this.live.values()].map(summary).sort((a, b) => a.createdAt - b.createdAt)
  }

  watch(listener: (change: EngineChange) => void): () => void {
    this.watchers.add(listener)
    return () => {
      this.watchers.delete(listener)
    }
  }

  async getRun(runId: string): Promise<RunRecord | undefined> {
    return this.live.get(runId) ?? this.finishing.get(runId) ?? (await this.store.getRun(runId))
  }

  async listRuns(filter: RunFilter = {}): Promise<RunSummary[]> {
    return (await this.queryRuns(filter)).runs
  }

  /** From the run index (store.ts); the live runs from memory, which may be ahead of the store. */
  queryRuns(filter: RunFilter = {}): Promise<RunPage> {
    return this.store.queryRuns(filter, [...this.live.values(), ...this.finishing.values()].map(summary))
  }

  async logs(runId: string): Promise<LogEntry[] | undefined> {
    return (await this.getRun(runId))?.log
  }

  history(): HistoryReach {
    return this.store.history()
  }

  forgetOnce(marks: readonly { sop: string; key: string; fingerprint: string }[]): void {
    if (this.closed || marks.length === 0) return
    const ops: BatchOp[] = []
    for (const m of marks) {
      const key = onceKey(m.sop, m.key)
      // A key being written now is left to that write.
      if (this.onceBusy.has(key)) continue
      const left = this.marks.forget(m.sop, m.key, m.fingerprint)
      if (left !== null) ops.push(this.store.markOp(key, left))
    }
    if (ops.length > 0)
      this.store
        .write(ops)
        .catch((err: unknown) => this.log.warn({ err: String(err) }, 'once-only marks not forgotten'))
  }

  keptTriggers(): KeptTrigger[] {
    return [...this.kept.values()].flat()
  }

  admissions(limit?: number): Promise<AdmissionRecord[]> {
    return this.store.admissions(limit)
  }

  setSops(sops: Sop[]): void {
    this.sops = new Map(sops.map((s) => [s.name, s]))
    for (const name of this.kept.keys()) this.release(name)
  }

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

  async idle(): Promise<void> {
    while (this.executing.size > 0) await Promise.all([...this.executing])
    await this.store.committer.drain()
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    for (const t of this.timers.values()) clearTimeout(t)
    this.timers.clear()
    clearInterval(this.pruneTimer)
    for (const ac of this.aborts.values()) ac.abort(new Error('engine closing'))
    // Tools get the abort; one that ignores it is not waited on for ever.
    let timer: NodeJS.Timeout | undefined
    await Promise.race([Promise.all([...this.executing]), new Promise((r) => (timer = setTimeout(r, 2000)))])
    clearTimeout(timer)
    await this.store.close()
  }

  // ---- restart ----------------------------------------------------------------------------

  /**
   * After a restart (issue 3, durability): parked runs stay parked, kept triggers stay kept,
   * a run that was pending starts again, and a run that was mid-step re-runs that step from its
   * first call with the same idempotency keys, so a tool whose effect is already durable
   * (chain_attest) returns its stored result instead of acting twice. Completed steps never re-run.
   */
  private async recover(): Promise<void> {
    this.lastFinished = await this.store.lastFinished()
    this.marks = new OnceMarks(await this.store.marks())
    for (const r of await this.store.unfinished()) this.live.add(r)
    for (const k of await this.store.kept()) this.keptFor(k.sop).push(k)
    for (const r of this.live.values()) this.resume(r)
    for (const name of this.kept.keys()) this.release(name)
    // Once-only marks are kept ONCE_KEEP_MS. The first prune is an hour after the start, so a
    // message redelivered after a long outage still finds its mark (it comes first).
    this.pruneTimer = setInterval(() => {
      this.store
        .pruneOnce(this.now() - ONCE_KEEP_MS)
        .catch((err: unknown) => this.log.warn({ err: String(err) }, 'once-only marks not pruned'))
    }, 3_600_000)
    this.pruneTimer.unref()
  }

  /**
   * A run read back from the store goes on where its record says. After a restart its current
   * step may have been under way (a repeat); a run whose admission was reported failed never ran.
   */
  private resume(r: RunRecord, restarted = true): void {
    // The stored record of the current step may be from an earlier visit (entering a step is
    // not written on its own): re-enter it, counting the visit, keeping its retry count.
    const cur = r.current !== null ? r.steps[r.current] : undefined
    if (
      r.current !== null &&
      (r.state === 'running' || r.state === 'pending' || isParked(r.state)) &&
      cur?.status !== 'running'
    ) {
      r.steps[r.current] = {
        number: r.current,
        status: 'running',
        visits: (cur?.visits ?? 0) + 1,
        attempts: 0,
        calls: [],
      }
    }
    // A pending run's first step may have been called too: entering it is not written on its
    // own, so a kill between the call and its result leaves the run pending.
    if (restarted && (r.state === 'running' || r.state === 'pending') && r.current !== null) {
      this.repeating.add(r.id)
      this.note(
        r,
        r.current,
        'warn',
        r.state === 'running'
          ? `hub restarted mid-run: resuming step ${r.current} from its first call`
          : `hub restarted mid-run: step ${r.current} starts again (it may have been called before the restart)`,
      )
    }
    if (r.state === 'running' || r.state === 'pending') this.spawn(r)
  }

  backupRecords(opts: { history: boolean }): AsyncIterable<[string, string]> {
    return this.store.exportRecords(opts)
  }

  /**
   * Opens the store again after a write failed (the disk guard calls it once there is room), and
   * takes up what a failed write may have left on disk after all, as a restart would: a batch
   * reported failed can still be whole in LevelDB's log. Runs, kept triggers and once-only marks
   * the engine does not hold are read back; the ones it holds are ahead of the store and kept.
   */
  async reopenStore(): Promise<void> {
    await this.store.reopen()
    if (this.closed) return
    const known = new Set([...this.live.values()].map((r) => r.id))
    for (const id of this.finishing.keys()) known.add(id)
    for (const [key, stored] of await this.store.marks()) this.marks.merge(key, stored)
    for (const [sop, at] of await this.store.lastFinished())
      if (at > (this.lastFinished.get(sop) ?? 0)) this.lastFinished.set(sop, at)
    const keptKeys = new Set([...this.keptTriggers().map((k) => k.key), ...this.unkeeping])
    for (const k of await this.store.kept()) if (!keptKeys.has(k.key)) this.keptFor(k.sop).push(k)
    for (const r of await this.store.unfinished(known)) {
      this.live.add(r)
      this.note(r, 0, 'info', 'admitted as the store failed; read back once it opened again')
      this.resume(r, false)
    }
    for (const name of this.kept.keys()) this.release(name)
  }
}

/** How long a once-only admission mark is kept (engine-api: `once`): a week. */
export const ONCE_KEEP_MS = 7 * 24 * 3_600_000

function agentAlias(sop: Sop, step: Step | undefined): { agent?: string } {
  const a = step?.agent ?? sop.agent
  return a !== undefined ? { agent: a } : {}
}

function badEvent(e: TriggerEvent): string | null {
  if (typeof e !== 'object' || e === null) return 'not an object'
  if (typeof e.type !== 'string') return 'type is missing'
  if (typeof e.source !== 'string') return 'source is missing'
  if (typeof e.at !== 'number' || !Number.isFinite(e.at)) return 'at is not a number'
  if (e.payload === undefined) return 'payload is missing'
  return null
}
