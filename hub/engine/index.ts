// The SOP runtime: `createEngine` is what the hub composes (issue 3).
import { Engine } from './engine.ts'
import type { HubEngine } from '../../sops/hub-engine.ts'
import type { EngineOptions } from './types.ts'

export type { EngineDisk, EngineOptions } from './types.ts'
export type { AgentAdapter } from '../agent/types.ts'

/**
 * The engine as the hub holds it: also the store heartbeat its watchdog writes (hub/service/),
 * and the reopen of its store once a full disk has room again (hub/disk/).
 */
export type RunningEngine = HubEngine & { heartbeat(): Promise<void>; reopenStore(): Promise<void> }

export function createEngine(opts: EngineOptions): Promise<RunningEngine> {
  return Engine.create(opts)
}
