// The run driver: one run from its admission to its end, as the pure rules of sops/run/ say
// (states, gates, routing, decisions). It makes the run, starts it (decide: questions), drives
// its steps (skip, gate, input contract, the step's work, output contract), routes after each,
// parks it at a gate and finishes it. Freed slots go back to admission through `release`.
import type { TriggerEvent } from '../../sops/engine-api.ts'
import { fail } from '../../errors/codes.ts'
import { errorText } from '../../errors/text.ts'
import { planDecisions } from '../../sops/run/decisions.ts'
import { effectiveMode, gateBefore } from '../../sops/run/gates.ts'
import { type RunRecord, type StepRecord, newRun, payloadAsInput } from '../../sops/run/record.ts'
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
import type { Json, Sop, Step } from '../../sops/types.ts'
import type { CallScope, CallsOutcome } from './calls.ts'
import { durable, persist } from './checkpoints.ts'
import { ConditionCache } from './condition-cache.ts'
import type { EngineContext } from './context.ts'
import { contractProblem } from './contracts.ts'
import { agentAlias, executeStep } from './execute.ts'
import { summary } from './summary.ts'
import { runId } from './run-id.ts'

export class RunDriver {
  private readonly conditions = new ConditionCache()
  private readonly triggerInputs = new WeakMap<RunRecord, Json>()
  private readonly aborts = new Map<string, AbortController>()

  constructor(
    private readonly ctx: EngineContext,
    /** Starts the SOP's kept triggers that may run now (admission.ts). */
    private readonly release: (sop: string) => void,
  ) {}

  /** A new run of `sop` for `event`, live and at its first step; not stored yet. */
  create(sop: Sop, event: TriggerEvent, admission: RunRecord['admission']): RunRecord {
    const ctx = this.ctx
    const first = firstStep(sop)
    const now = ctx.now()
    const run = newRun({
      id: runId(now),
      sop: sop.name,
      mode: sop.executionMode,
      trigger: event,
      first: first.kind === 'step' ? first.step : null,
      now,
      admission,
    })
    if (first.kind === 'step') this.enter(run, first.step)
    ctx.live.add(run)
    ctx.runSop.set(run.id, sop)
    return run
  }

  spawn(run: RunRecord): void {
    const p = this.drive(run).catch((err: unknown) => {
      this.ctx.log.error({ run: run.id, err: errorText(err) }, 'run driver crashed')
    })
    this.ctx.track(p)
  }

  /** Every run's tools are told to stop (close()). */
  abortAll(reason: Error): void {
    for (const ac of this.aborts.values()) ac.abort(reason)
  }

  // ---- the step loop ----------------------------------------------------------------------

  /** Routing reached step n: count the visit and reset its attempt (sops/RUNTIME.md, "The visit cap"). */
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

  async finish(run: RunRecord, how: 'end' | 'fail' | 'deny' | 'cancel', why: string): Promise<void> {
    const ctx = this.ctx
    ctx.move(run, how)
    run.finishedAt = ctx.now()
    run.current = null
    delete run.gate
    if (how === 'end') ctx.note(run, 0, 'info', `completed: ${why}`)
    else {
      run.error = why
      ctx.note(run, 0, how === 'fail' ? 'error' : 'warn', `${run.state}: ${why}`)
    }
    ctx.lastFinished.set(run.sop, run.finishedAt)
    ctx.live.delete(run.id)
    ctx.runSop.delete(run.id)
    this.aborts.delete(run.id)
    run.updatedAt = ctx.now()
    // Deferred (group-commit.ts): no side effect waits for a finished run's record. It is handed
    // to the group commit before the SOP's kept triggers are released, so their admissions are
    // stored after it, in its batch or a later one. The news of it waits for it (EngineChange:
    // told once durable), for as long as the group commit holds it (DEFER_MS, longer while
    // events come steadily). A kill before it lands re-runs the last step on restart, marked as
    // a possible repeat, as a kill during that step would.
    ctx.finishing.set(run.id, run)
    const stored = durable(
      ctx,
      run.id,
      [...ctx.store.finishOps(run, summary(run)), ctx.store.lastFinishedOp(run.sop, run.finishedAt)],
      { defer: true },
    )
    this.release(run.sop)
    try {
      await stored
    } finally {
      ctx.finishing.delete(run.id)
    }
    ctx.runChanged(run)
    ctx.store.forget(run.id)
  }

  private async applyRoute(run: RunRecord, route: Route): Promise<void> {
    if (route.kind === 'end') return this.finish(run, 'end', route.reason)
    if (route.kind === 'fail') return this.finish(run, 'fail', route.error)
    const rec = run.steps[route.step]
    if ((rec?.visits ?? 0) >= MAX_VISITS) {
      return this.finish(run, 'fail', `step ${route.step} was visited more than ${MAX_VISITS} times`)
    }
    this.enter(run, route.step)
    await persist(this.ctx, run)
  }

  /** Parks the run at a gate; the slot it held frees for deferred triggers (sops/RUNTIME.md, "Admission"). */
  private async park(run: RunRecord, gate: NonNullable<RunRecord['gate']>): Promise<void> {
    const ctx = this.ctx
    ctx.move(run, gate.kind === 'checkpoint' ? 'checkpoint' : 'gate')
    run.gate = gate
    ctx.note(run, gate.step, 'info', `waiting for approval before step ${gate.step}: ${gate.reason}`)
    await persist(ctx, run)
    this.release(run.sop)
  }

  private async startRun(run: RunRecord, sop: Sop): Promise<boolean> {
    const ctx = this.ctx
    const deterministic = effectiveMode(sop, undefined) === 'deterministic'
    const trigger = run.trigger.payload as Json
    const plan = planDecisions(sop, {
      deterministic,
      hasAgent: ctx.agent !== undefined,
      trigger,
      isCondition: (q) => this.conditions.isCondition(q),
      evalCond: this.conditions.evaluate,
    })
    let changed = false
    for (const d of plan.decided) {
      run.decisions[d.step] = d.value
      run.decidedBy[d.step] = d.by
      ctx.note(
        run,
        d.step,
        'info',
        `decide: "${stepByNumber(sop, d.step)?.decide ?? ''}" → ${d.value ? 'yes' : 'no'} (${d.by})`,
      )
      changed = true
    }
    for (const q of plan.agent) {
      const ac = this.abortFor(run)
      const ans = await ctx.agent!.decide({
        sop: { name: sop.name, description: sop.description },
        question: q.question,
        trigger: run.trigger,
        ...agentAlias(sop, stepByNumber(sop, q.step)),
        signal: ac.signal,
      })
      if (ctx.closed) return false
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
      ctx.note(run, q.step, 'info', `decide: "${q.question}" → ${ans.value ? 'yes' : 'no'} (agent)`)
      changed = true
    }
    ctx.move(run, 'start')
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
      await this.park(run, { ...gate, operatorOnly: true, questions: plan.operator, since: ctx.now() })
      return false
    }
    if (changed) await persist(ctx, run)
    return true
  }

  private abortFor(run: RunRecord): AbortController {
    let ac = this.aborts.get(run.id)
    if (!ac) {
      ac = new AbortController()
      // Asked for after close() aborted the others: it is aborted too.
      if (this.ctx.closed) ac.abort(new Error('engine closing'))
      else this.aborts.set(run.id, ac)
    }
    return ac
  }

  async drive(run: RunRecord): Promise<void> {
    const ctx = this.ctx
    const sop = ctx.runSop.get(run.id) ?? ctx.sops.get(run.sop)
    if (!sop) return this.finish(run, 'fail', `SOP "${run.sop}" is no longer loaded`)
    ctx.runSop.set(run.id, sop)
    if (run.state === 'pending') {
      if (!(await this.startRun(run, sop))) return
    }
    while (run.state === 'running' && !ctx.closed) {
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

      // `when:` is not a skip: it is read after the step runs, in routeAfterComplete
      // (sops/RUNTIME.md, "Routing").
      const guards = this.guardContext(run)
      const skip = skipReason(step, guards, (n) => run.steps[n]?.status === 'completed')
      if (skip !== null) {
        rec.status = 'skipped'
        rec.reason = skip
        ctx.note(run, step.number, 'info', `skipped: ${skip}`)
        await this.applyRoute(run, routeAfterSkip(sop, step))
        continue
      }

      const gate = gateBefore(sop, step, run)
      if (gate) return this.park(run, { ...gate, since: ctx.now() })

      const input = run.lastOutput
      rec.input = input
      if (step.input) {
        const bad = contractProblem(step.input, input)
        if (bad !== null) {
          rec.status = 'failed'
          rec.error = `input contract: ${bad}`
          // Retrying cannot change the input, so a failing input contract fails the run
          // (sops/RUNTIME.md, "Contracts at run time").
          return this.finish(
            run,
            'fail',
            `step ${step.number}: input does not match its input contract: ${bad}`,
          )
        }
      }

      rec.startedAt = ctx.now()
      delete rec.endedAt
      const result = await this.execute(run, sop, step, input)
      if (ctx.closed) return
      rec.endedAt = ctx.now()
      let outcome = result
      if (outcome.ok && step.output) {
        const bad = contractProblem(step.output, outcome.output)
        if (bad !== null)
          outcome = {
            ...fail('UPSTREAM_FAILED', `output does not match its output contract: ${bad}`),
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
        ctx.note(run, step.number, 'info', `completed: ${step.title}`)
        await this.applyRoute(
          run,
          routeAfterComplete(sop, step, this.guardContext(run), this.conditions.evaluate),
        )
        continue
      }
      rec.attempts++
      rec.error = outcome.error
      ctx.note(run, step.number, 'warn', `attempt ${rec.attempts} failed: ${outcome.error}`)
      const fr = routeAfterFailure(sop, step, rec.attempts, outcome.error)
      if (fr.kind === 'retry') {
        await persist(ctx, run)
        continue
      }
      rec.status = 'failed'
      run.passedGates = run.passedGates.filter((g) => g !== step.number)
      await this.applyRoute(run, fr)
    }
  }

  /** The step's work (execute.ts), with the scope its calls read. */
  private execute(run: RunRecord, sop: Sop, step: Step, input: Json): Promise<CallsOutcome> {
    const abortFor = () => this.abortFor(run)
    const scope: CallScope = {
      runId: run.id,
      sop: sop.name,
      step,
      steps: this.stepOutputs(run),
      trigger: this.triggerInput(run),
      ...(this.ctx.repeating.delete(run.id) ? { repeat: true } : {}),
      // Made when a tool first reads it (most never do; an AbortController per run was 2% of a
      // short run's CPU).
      get signal() {
        return abortFor().signal
      },
    }
    return executeStep(this.ctx, run, sop, step, input, scope)
  }
}
