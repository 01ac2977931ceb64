// The durable record of one run: everything needed to show it, approve it, and resume it after
// a restart. Plain JSON so the store writes it as is. Pure types and constructors only.
import type { AdmissionOutcome, TriggerEvent } from '../engine-api.ts'
import type { ExecutionMode, Json } from '../types.ts'
import type { RunState, StepStatus } from './states.ts'

export interface StepRecord {
  number: number
  status: StepStatus | 'running'
  /** How many times the step was entered (sops/RUNTIME.md, "The visit cap"). */
  visits: number
  /** Failed attempts since the step was last entered (for `retry:N`). */
  attempts: number
  input?: Json
  output?: Json
  /** Outputs of the calls made in the latest attempt, 0-based (`{{calls.K}}`). */
  calls: Json[]
  error?: string
  /** Why the step was skipped (`unless_decided`, `decide` answered no, unmet `depends_on`; `when:` never skips). */
  reason?: string
  /** When the latest attempt's calls began and ended (ms since the epoch): the step's duration. */
  startedAt?: number
  endedAt?: number
}

export type GateKind = 'approval' | 'checkpoint' | 'decision'

export interface Gate {
  step: number
  kind: GateKind
  /** Why the gate is there (requires_confirmation, supervised, step_by_step…). */
  reason: string
  prompt?: string
  /** Questions the operator must answer with this approval (sops/RUNTIME.md, "Decide questions"). */
  questions?: { step: number; question: string }[]
  /**
   * Only an operator (CLI, local API) may pass this gate: requires_confirmation, checkpoints and
   * operator questions. Mode gates (supervised, step_by_step) may also be passed by the agent's
   * `sop_approve` tool on its user's behalf.
   */
  operatorOnly: boolean
  /** Approval requests recorded by agents at an operator-only gate (they pass nothing). */
  requests?: { by: string; note?: string; at: number }[]
  since: number
}

export interface ApprovalRecord {
  step: number
  kind: GateKind
  decision: 'approved' | 'denied'
  by: string
  note?: string
  at: number
}

export interface LogEntry {
  at: number
  /** Step number, or 0 for run-level events. */
  step: number
  level: 'info' | 'warn' | 'error'
  msg: string
}

export interface RunRecord {
  id: string
  sop: string
  /** The SOP's mode when the run started (steps may override with `mode:`). */
  mode: ExecutionMode
  state: RunState
  trigger: TriggerEvent
  createdAt: number
  updatedAt: number
  finishedAt?: number
  /** The step to run next (or running now); null once finished. */
  current: number | null
  /** The output of the step that ran last: the next step's input (sops/RUNTIME.md, "Step input and output"). */
  lastOutput: Json
  /** The step `lastOutput` came from; null while it is still the trigger payload. */
  lastFrom: number | null
  steps: Record<string, StepRecord>
  decisions: Record<string, boolean>
  /** How each decision was reached (agent, condition, operator). */
  decidedBy: Record<string, string>
  /** Set by the first approval: supervised steps ask only once per run. */
  runApproved: boolean
  /** Steps whose own gate has been passed in their current visit. */
  passedGates: number[]
  gate?: Gate
  approvals: ApprovalRecord[]
  /** Triggers folded into this run by the coalesce policy (the latest MAX_COALESCED_KEPT). */
  coalesced: TriggerEvent[]
  coalescedCount: number
  admission: AdmissionOutcome
  error?: string
  log: LogEntry[]
  /** Log entries ever appended (the stored log is keyed by this sequence). */
  logSeq: number
}

/** Step 1's input: the trigger payload, parsed as JSON when it parses, else the text (sops/RUNTIME.md, "Step input and output"). */
export function payloadAsInput(payload: string | Json): Json {
  if (typeof payload !== 'string') return payload
  try {
    return JSON.parse(payload) as Json
  } catch {
    return payload
  }
}

/** A run's decisions, approvals and folded triggers as it starts: fresh objects, since a run is mutated. */
export function startState(): Pick<
  RunRecord,
  'decisions' | 'decidedBy' | 'runApproved' | 'passedGates' | 'approvals' | 'coalesced' | 'coalescedCount'
> {
  return {
    decisions: {},
    decidedBy: {},
    runApproved: false,
    passedGates: [],
    approvals: [],
    coalesced: [],
    coalescedCount: 0,
  }
}

export function newRun(init: {
  id: string
  sop: string
  mode: ExecutionMode
  trigger: TriggerEvent
  first: number | null
  now: number
  admission: AdmissionOutcome
}): RunRecord {
  return {
    id: init.id,
    sop: init.sop,
    mode: init.mode,
    state: 'pending',
    trigger: init.trigger,
    createdAt: init.now,
    updatedAt: init.now,
    current: init.first,
    lastOutput: payloadAsInput(init.trigger.payload),
    lastFrom: null,
    steps: {},
    ...startState(),
    admission: init.admission,
    log: [],
    logSeq: 0,
  }
}

/** A run folding a trigger storm keeps the latest events only: its state record is rewritten at every change. */
export const MAX_COALESCED_KEPT = 100

/** Keeps a run's log bounded: a looping run must not grow its record without limit. */
export const MAX_LOG_ENTRIES = 2000

export function appendLog(run: RunRecord, entry: LogEntry): void {
  run.log.push(entry)
  run.logSeq++
  if (run.log.length > MAX_LOG_ENTRIES) run.log.splice(0, run.log.length - MAX_LOG_ENTRIES)
}
