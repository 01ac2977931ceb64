// The SOP runtime: `createEngine` is what the hub composes (issue 3).
import { Engine } from './engine.ts'
import type { HubEngine } from '../../sops/hub-engine.ts'
import type { EngineOptions } from './types.ts'

export type { EngineOptions } from './types.ts'
export type { AgentAdapter } from '../agent/types.ts'

export function createEngine(opts: EngineOptions): Promise<HubEngine> {
  return Engine.create(opts)
}
