// The boundary between the SOP engine and everything that starts, watches or approves runs
// (trigger router, CLI, local API, tools). Triggers only ever call `Engine.trigger`; the hub
// composes a `HubEngine` (hub/engine) and hands it to the rest as this interface.
import type { Gate, LogEntry, RunRecord } from './run/record.ts'
import type { RunState } from './run/states.ts'
import type { Json, Sop, TriggerType } from './types.ts'

export interface TriggerEvent {
  /** Which kind of trigger fired, and a human-readable source (`boards/vend1/coin`, `cron`, a webhook path…). */
  type: TriggerType
  source: string
  /** The payload: text as received (board text, MQTT payload) or a JSON value (webhook body, manual). */
  payload: string | Json
  /** Epoch ms when the trigger fired. */
  at: number
}

export type AdmissionOutcome =
  | 'started'
  | 'deferred' // parallel, no slot free: kept durably, runs when a slot frees
  | 'held' // hold: kept durably until no run of this SOP is active or parked
  | 'coalesced' // folded into the run in flight (recorded on it)
  | 'dropped' // drop policy, no slot free
  | 'cooldown' // inside cooldown_secs after the last finished run

export interface AdmissionDecision {
  outcome: AdmissionOutcome
  /** The run started, or the run it was coalesced into. */
  runId?: string
  reason: string
}

export interface Engine {
  trigger(sopName: string, event: TriggerEvent): Promise<AdmissionDecision>
}

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

export interface ApproveOptions {
  by?: string
  note?: string
  /** Answers to the `decide:` questions carried by the gate, by step number. */
  decisions?: Record<number, boolean>
  /** Who is approving: the operator (CLI, local API; default) or an agent tool (`sop_approve`), which cannot pass operator-only gates. */
  via?: 'operator' | 'agent'
}

export type RunResult = { ok: true; run: RunRecord } | { ok: false; error: string }

export interface RunSummary {
  id: string
  sop: string
  state: RunState
  current: number | null
  createdAt: number
  updatedAt: number
  finishedAt?: number
  gate?: Gate
  error?: string
}

export interface RunFilter {
  sop?: string
  state?: RunState
  /** Newest first; default 100. */
  limit?: number
}

export interface HubEngine extends Engine {
  approve(runId: string, opts?: ApproveOptions): Promise<RunResult>
  deny(runId: string, opts?: { by?: string; note?: string }): Promise<RunResult>
  /** Runs parked at a gate (waiting_approval, paused_checkpoint), oldest first. */
  pending(): RunSummary[]
  getRun(runId: string): Promise<RunRecord | undefined>
  listRuns(filter?: RunFilter): Promise<RunSummary[]>
  logs(runId: string): Promise<LogEntry[] | undefined>
  /** Triggers kept by the parallel (deferred) and hold (held) policies, in arrival order. */
  keptTriggers(): KeptTrigger[]
  /** Recorded admission decisions, oldest first (the latest `limit`, default 1000). */
  admissions(limit?: number): Promise<AdmissionRecord[]>
  /** Replace the loaded SOPs; runs in flight keep the SOP they started with. */
  setSops(sops: Sop[]): void
  /** Resolves when nothing is executing and every write is durable (tests, bench). */
  idle(): Promise<void>
  close(): Promise<void>
}
