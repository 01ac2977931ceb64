// What the hub passes to `createEngine`. The engine's public surface (HubEngine, RunSummary, …)
// is declared beside the trigger boundary in sops/engine-api.ts, so tools and the CLI see it
// without importing the hub.
import type { Sop } from '../../sops/types.ts'
import type { ToolRegistry } from '../../tools/types.ts'
import type { AgentAdapter } from '../agent/types.ts'
import type { Log } from '../log.ts'

export interface EngineOptions {
  sops: Sop[]
  tools: ToolRegistry
  /** LevelDB folder for runs, kept triggers and admission records. */
  dbPath: string
  agent?: AgentAdapter
  now?: () => number
  log?: Log
}
