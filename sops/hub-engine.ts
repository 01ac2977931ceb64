// The engine's public surface beyond `trigger` (engine-api.ts): runs, approvals, history, kept
// triggers. The hub implements it (hub/engine); the CLI, the local API and the sop_* tools use
// it through this interface, without importing the hub.
import type { Failure } from '../errors/codes.ts'
import type { AdmissionRecord, Engine, KeptTrigger } from './engine-api.ts'
import type { Gate, LogEntry, RunRecord } from './run/record.ts'
import type { RunState } from './run/states.ts'
import type { Sop } from './types.ts'

export interface ApproveOptions {
  by?: string
  note?: string
  /** Answers to the `decide:` questions carried by the gate, by step number. */
  decisions?: Record<number, boolean>
  /** Who is approving: the operator (CLI, local API; default) or an agent tool (`sop_approve`), which cannot pass operator-only gates. */
  via?: 'operator' | 'agent'
}

/**
 * A refused approve or deny says why by its code (errors/codes.ts): a missing run id, a run that
 * is not there, one not waiting, an answer to a question not given, a gate an agent cannot pass.
 */
export type RunResult =
  | { ok: true; run: RunRecord }
  | Failure<'BAD_INPUT' | 'RUN_NOT_FOUND' | 'RUN_NOT_WAITING' | 'DECISION_MISSING' | 'NEEDS_OPERATOR'>

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
  /** Only runs created at or after this time (ms since the epoch). */
  since?: number
  /** Only runs created before this time (ms since the epoch). */
  until?: number
  /** Where the previous page ended: `RunPage.next` of the page before, opaque to callers. */
  cursor?: string
}

/**
 * A filter the engine cannot serve (an unknown state, a cursor it did not give out, a time that
 * is not one): the caller's input is wrong, so the local API answers 400 with the message.
 */
export class RunFilterError extends Error {
  readonly code = 'BAD_RUN_FILTER'
  constructor(message: string) {
    super(message)
    this.name = 'RunFilterError'
  }
}

/** One page of run history, newest first; `next` is null on the last page. */
export interface RunPage {
  runs: RunSummary[]
  next: string | null
}

/**
 * What changed in the engine, for watchers (the hub's MQTT state topics, a console): told after
 * the change is durable, never before, so a watcher never reports what a crash would undo.
 */
export type EngineChange =
  /** A run was stored: admitted, moved a step, parked at a gate, approved, finished. */
  | { kind: 'run'; run: RunSummary }
  /** A trigger was kept (held or deferred) or a kept one was released, for this SOP. */
  | { kind: 'kept'; sop: string }

/** What `HubEngine.history` tells: the oldest run kept and the log's size, against its bounds. */
export interface HistoryReach {
  /** Creation time of the oldest finished run in the history (ms since the epoch); null: none. */
  oldestAt: number | null
  /** Bytes of the history log: its segment files and their index files. */
  logBytes: number
  segments: number
  /** The bounds: finished runs older than this many ms, or past this many log bytes, are dropped. */
  maxAgeMs: number
  maxBytes: number
}

export interface HubEngine extends Engine {
  approve(runId: string, opts?: ApproveOptions): Promise<RunResult>
  deny(runId: string, opts?: { by?: string; note?: string }): Promise<RunResult>
  /** Runs parked at a gate (waiting_approval, paused_checkpoint), oldest first. */
  pending(): RunSummary[]
  /** Unfinished runs (pending, running, parked), oldest first: from memory, no store read. */
  liveRuns(): RunSummary[]
  /**
   * Calls `listener` after each durable change; returns the unsubscribe. A listener that throws
   * is logged and kept: a watcher's bug must not stop a run.
   */
  watch(listener: (change: EngineChange) => void): () => void
  getRun(runId: string): Promise<RunRecord | undefined>
  listRuns(filter?: RunFilter): Promise<RunSummary[]>
  /**
   * A page of run history (finished and live) by the filter, newest first, keyset-paginated from
   * the run index. Throws RunFilterError for a filter it cannot serve.
   */
  queryRuns(filter?: RunFilter): Promise<RunPage>
  logs(runId: string): Promise<LogEntry[] | undefined>
  /** Triggers kept by the parallel (deferred) and hold (held) policies, in arrival order. */
  keptTriggers(): KeptTrigger[]
  /**
   * How far back the run history reaches and what it takes on disk (hub/engine/README.md,
   * "Retention"); absent on an engine without a history log.
   */
  history?(): HistoryReach
  /** Recorded admission decisions, oldest first (the latest `limit`, default 1000). */
  admissions(limit?: number): Promise<AdmissionRecord[]>
  /** Replace the loaded SOPs; runs in flight keep the SOP they started with. */
  setSops(sops: Sop[]): void
  /** Resolves when nothing is executing and every write is durable (tests, bench). */
  idle(): Promise<void>
  close(): Promise<void>
}
