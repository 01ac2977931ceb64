// Approval gates (sops/RUNTIME.md, "Approval gates"). Pure: given the SOP, the step and the run, is there a
// gate before the step, and of which kind. No tool call, API call or agent reply passes a gate;
// only `approve` on the engine does, by recording the step in `passedGates`.
import type { ExecutionMode, Sop, Step } from '../types.ts'
import type { Gate, RunRecord } from './record.ts'

export type ResolvedMode = Exclude<ExecutionMode, 'priority_based'>

/** The step's `mode:` or the SOP's; priority_based resolves by the SOP's priority (sops/RUNTIME.md, "Execution modes at run time"). */
export function effectiveMode(sop: Sop, step: Step | undefined): ResolvedMode {
  const mode = step?.mode ?? sop.executionMode
  if (mode !== 'priority_based') return mode
  return sop.priority === 'critical' || sop.priority === 'high' ? 'auto' : 'supervised'
}

export type GateSpec = Omit<Gate, 'since'>

/** The gate in front of `step` for this run, or null when it may run now. */
export function gateBefore(
  sop: Sop,
  step: Step,
  run: Pick<RunRecord, 'passedGates' | 'runApproved'>,
): GateSpec | null {
  if (run.passedGates.includes(step.number)) return null
  const mode = effectiveMode(sop, step)
  const base = { step: step.number, ...(step.prompt !== undefined ? { prompt: step.prompt } : {}) }
  if (step.requiresConfirmation)
    return {
      ...base,
      kind: 'approval',
      operatorOnly: true,
      reason: 'requires_confirmation: asked in every mode',
    }
  // A checkpoint pauses a deterministic run (sops/RUNTIME.md, "Checkpoints"); in the other modes it is an ordinary approval gate.
  if (step.kind === 'checkpoint') {
    return mode === 'deterministic'
      ? { ...base, kind: 'checkpoint', operatorOnly: true, reason: 'checkpoint step in a deterministic run' }
      : { ...base, kind: 'approval', operatorOnly: true, reason: 'checkpoint step' }
  }
  // The run's own approval comes from the SOP's mode and no step's `mode:` can take it away
  // (sops/RUNTIME.md, "Approval gates"): a supervised SOP (or priority_based at normal/low) waits before
  // whichever step would run first, even one that says `mode: auto`.
  if (effectiveMode(sop, undefined) === 'supervised' && !run.runApproved)
    return { ...base, kind: 'approval', operatorOnly: false, reason: 'supervised: approval before the run' }
  if (mode === 'step_by_step')
    return {
      ...base,
      kind: 'approval',
      operatorOnly: false,
      reason: 'step_by_step: approval before each step',
    }
  // A step that asks for supervision itself is gated before it, whatever the SOP's mode.
  if (step.mode !== undefined && mode === 'supervised')
    return {
      ...base,
      kind: 'approval',
      operatorOnly: false,
      reason: 'supervised: this step asks approval before it runs (its mode:)',
    }
  return null
}
