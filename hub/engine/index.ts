// The SOP runtime: `createEngine` is what the hub composes (sops/RUNTIME.md).
import { Engine } from './engine.ts'
import type { HubEngine } from '../../sops/hub-engine.ts'
import type { EngineOptions } from './types.ts'

export type { EngineDisk, EngineOptions } from './types.ts'
export type { AgentAdapter } from '../agent/types.ts'

/**
 * The engine as the hub holds it: also the store heartbeat its watchdog writes (hub/service/),
 * the reopen of its store once a full disk has room again (hub/disk/), and its records for a
 * backup (hub/backup/).
 */
export type RunningEngine = HubEngine & {
  heartbeat(): Promise<void>
  reopenStore(): Promise<void>
  /** What a backup keeps of the store (hub/backup/README.md), from one snapshot. */
  backupRecords(opts: { history: boolean }): AsyncIterable<[string, string]>
}

export function createEngine(opts: EngineOptions): Promise<RunningEngine> {
  return Engine.create(opts)
}
