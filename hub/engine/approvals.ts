// Approvals: a run parked at a gate goes on when an operator (or, where the gate allows it, the
// agent) approves it, with the answers to its decide: questions, or finishes denied.
import { fail } from '../../errors/codes.ts'
import type { ApproveOptions, RunResult } from '../../sops/hub-engine.ts'
import type { RunRecord } from '../../sops/run/record.ts'
import { isParked } from '../../sops/run/states.ts'
import { persist } from './checkpoints.ts'
import type { EngineContext } from './context.ts'
import type { RunDriver } from './run-driver.ts'

export async function approve(
  ctx: EngineContext,
  driver: RunDriver,
  runId: string,
  opts: ApproveOptions = {},
): Promise<RunResult> {
  const run = ctx.live.get(runId)
  const bad = (await notWaiting(ctx, runId, run)) ?? stillWaiting(runId, run)
  if (bad) return bad
  const gate = run!.gate!
  if (opts.via === 'agent' && gate.operatorOnly) {
    // No tool call or agent reply passes such a gate; the request is kept for the operator
    // (sops/RUNTIME.md, "Who may pass a gate").
    const req = {
      by: opts.by ?? 'agent',
      ...(opts.note !== undefined ? { note: opts.note } : {}),
      at: ctx.now(),
    }
    gate.requests = [...(gate.requests ?? []), req]
    ctx.note(
      run!,
      gate.step,
      'info',
      `approval requested by ${req.by}; the gate needs an operator (${gate.reason})`,
    )
    await persist(ctx, run!)
    return {
      ok: false,
      code: 'NEEDS_OPERATOR',
      error: `run ${runId} waits at step ${gate.step} for an operator (${gate.reason}); the request is recorded, approve it with \`svc sop approve ${runId}\``,
    }
  }
  const answers: Record<string, boolean> = {}
  for (const q of gate.questions ?? []) {
    const a = opts.decisions?.[q.step] ?? opts.decisions?.[String(q.step) as unknown as number]
    if (typeof a !== 'boolean') {
      return {
        ok: false,
        code: 'DECISION_MISSING',
        error: `run ${runId} needs an answer to step ${q.step}'s question "${q.question}" (decisions: { "${q.step}": true|false })`,
      }
    }
    answers[q.step] = a
  }
  const r = run!
  for (const [k, v] of Object.entries(answers)) {
    r.decisions[k] = v
    r.decidedBy[k] = `operator ${opts.by ?? 'operator'}`
    ctx.note(r, Number(k), 'info', `decide: answered ${v ? 'yes' : 'no'} by ${opts.by ?? 'operator'}`)
  }
  r.approvals.push({
    step: gate.step,
    kind: gate.kind,
    decision: 'approved',
    by: opts.by ?? 'operator',
    ...(opts.note !== undefined ? { note: opts.note } : {}),
    at: ctx.now(),
  })
  if (gate.kind !== 'decision') r.passedGates.push(gate.step)
  r.runApproved = true
  delete r.gate
  ctx.move(r, 'approve')
  ctx.note(r, gate.step, 'info', `approved by ${opts.by ?? 'operator'}${opts.note ? `: ${opts.note}` : ''}`)
  await persist(ctx, r)
  if (!ctx.closed) driver.spawn(r)
  return { ok: true, run: r }
}

export async function deny(
  ctx: EngineContext,
  driver: RunDriver,
  runId: string,
  opts: { by?: string; note?: string } = {},
): Promise<RunResult> {
  const run = ctx.live.get(runId)
  const bad = (await notWaiting(ctx, runId, run)) ?? stillWaiting(runId, run)
  if (bad) return bad
  const r = run!
  const gate = r.gate!
  r.approvals.push({
    step: gate.step,
    kind: gate.kind,
    decision: 'denied',
    by: opts.by ?? 'operator',
    ...(opts.note !== undefined ? { note: opts.note } : {}),
    at: ctx.now(),
  })
  await driver.finish(
    r,
    'deny',
    `denied by ${opts.by ?? 'operator'} before step ${gate.step}${opts.note ? `: ${opts.note}` : ''}`,
  )
  return { ok: true, run: r }
}

/** Synchronous re-check after an await: a concurrent approve/deny may have moved the run meanwhile. */
function stillWaiting(runId: string, run: RunRecord | undefined): RunResult | null {
  return run && isParked(run.state) && run.gate
    ? null
    : fail('RUN_NOT_WAITING', `run ${runId} is not waiting for approval (it is ${run?.state ?? 'gone'})`)
}

async function notWaiting(
  ctx: EngineContext,
  runId: string,
  run: RunRecord | undefined,
): Promise<RunResult | null> {
  if (typeof runId !== 'string' || runId === '') return fail('BAD_INPUT', 'run id is missing')
  if (run && isParked(run.state) && run.gate) return null
  const stored = run ?? ctx.finishing.get(runId) ?? (await ctx.store.getRun(runId))
  if (!stored) return fail('RUN_NOT_FOUND', `no run with id "${runId}"`)
  return fail('RUN_NOT_WAITING', `run ${runId} is not waiting for approval (it is ${stored.state})`)
}
