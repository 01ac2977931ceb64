// The SOP runtime: `createEngine` is what the hub composes (issue 3).
import { Engine } from './engine.ts'
import type { EngineOptions, HubEngine } from './types.ts'

export type {
  ApproveOptions,
  EngineLog,
  EngineOptions,
  HubEngine,
  RunFilter,
  RunResult,
  RunSummary,
} from './types.ts'
export type { AdmissionRecord, KeptTrigger } from './store.ts'
export type { AgentAdapter } from '../agent/types.ts'

export function createEngine(opts: EngineOptions): Promise<HubEngine> {
  return Engine.create(opts)
}
