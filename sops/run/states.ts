// The run state machine (sops/RUNTIME.md, "Run states"). Pure: a table of allowed
// transitions and the events that cause them, so every move a run makes is one checked step.
//
//   pending ──start──▶ running ──step done / skipped──▶ running
//   pending ──gate────▶ waiting_approval | paused_checkpoint
//   running ──gate────▶ waiting_approval | paused_checkpoint
//   waiting_approval | paused_checkpoint ──approve──▶ running
//   waiting_approval | paused_checkpoint ──deny─────▶ cancelled
//   running ──end─────▶ completed        running ──fail──▶ failed
//   pending | running | waiting_approval | paused_checkpoint ──cancel──▶ cancelled
import { fail, type Result } from '../../errors/codes.ts'

export const RUN_STATES = [
  'pending',
  'running',
  'waiting_approval',
  'paused_checkpoint',
  'completed',
  'failed',
  'cancelled',
] as const
export type RunState = (typeof RUN_STATES)[number]

export const STEP_STATUSES = ['completed', 'failed', 'skipped'] as const
export type StepStatus = (typeof STEP_STATUSES)[number]

export type RunEvent =
  | 'start'
  | 'gate'
  | 'checkpoint'
  | 'approve'
  | 'deny'
  | 'advance'
  | 'end'
  | 'fail'
  | 'cancel'

const TABLE: Record<RunState, Partial<Record<RunEvent, RunState>>> = {
  pending: {
    start: 'running',
    gate: 'waiting_approval',
    checkpoint: 'paused_checkpoint',
    fail: 'failed',
    cancel: 'cancelled',
    end: 'completed',
  },
  running: {
    advance: 'running',
    gate: 'waiting_approval',
    checkpoint: 'paused_checkpoint',
    end: 'completed',
    fail: 'failed',
    cancel: 'cancelled',
  },
  waiting_approval: { approve: 'running', deny: 'cancelled', cancel: 'cancelled' },
  paused_checkpoint: { approve: 'running', deny: 'cancelled', cancel: 'cancelled' },
  completed: {},
  failed: {},
  cancelled: {},
}

export type TransitionResult = Result<{ state: RunState }>

/** The state `event` moves a run in `from` to, or why it cannot. */
export function transition(from: RunState, event: RunEvent): TransitionResult {
  const to = TABLE[from][event]
  if (to === undefined) return fail('CONFLICT', `a run that is ${from} cannot ${event}`)
  return { ok: true, state: to }
}

export function isFinished(state: RunState): boolean {
  return state === 'completed' || state === 'failed' || state === 'cancelled'
}

/** Parked at a gate: waiting for an operator, holding no slot (sops/RUNTIME.md, "Admission"). */
export function isParked(state: RunState): boolean {
  return state === 'waiting_approval' || state === 'paused_checkpoint'
}

/** Active runs hold an admission slot. */
export function holdsSlot(state: RunState): boolean {
  return state === 'pending' || state === 'running'
}
