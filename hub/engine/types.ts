// What the hub passes to `createEngine`. The engine's public surface (HubEngine, RunSummary, …)
// is declared beside the trigger boundary in sops/engine-api.ts, so tools and the CLI see it
// without importing the hub.
import type { Sop } from '../../sops/types.ts'
import type { ToolRegistry } from '../../tools/types.ts'
import type { AgentAdapter } from '../agent/types.ts'
import type { Log } from '../log.ts'
import type { HistoryBounds } from './log/retention.ts'

export interface EngineOptions {
  sops: Sop[]
  tools: ToolRegistry
  /** LevelDB folder for runs, kept triggers and admission records. */
  dbPath: string
  agent?: AgentAdapter
  now?: () => number
  log?: Log
  /** How much finished history the store keeps (hub/engine/log/retention.ts); default 30 days, 1 GiB. */
  history?: HistoryBounds
  /** `[history] commit_window_ms`: how long a write waits for others to share its sync. */
  commitWindowMs?: number
  /** How long LevelDB's share of the store's writes waits for quiet (store-context.ts `STAGE_MS`; tests). */
  stageMs?: number
  /** The disk guard (hub/disk/guard.ts): no new work below the disk's reserve; told of failed writes. */
  disk?: EngineDisk
}

/** What the engine asks of the disk guard. */
export interface EngineDisk {
  /** Null when new work may be taken; else why not (a promise when the disk is read first). */
  refusal(): string | null | Promise<string | null>
  refusing(): boolean
  /** Resolves once new work is taken again. */
  room(): Promise<void>
  /** A store write failed with an I/O error (the guard refuses and reopens the store once there is room). */
  writeFailed(store: string, err: unknown): void
}
