// What the engine answers about runs: the live ones from memory (which may be ahead of the
// store), finished ones whose record is not on disk yet from `finishing`, the rest from the store.
import type { KeptTrigger } from '../../sops/engine-api.ts'
import type { RunFilter, RunPage, RunSummary } from '../../sops/hub-engine.ts'
import type { LogEntry, RunRecord } from '../../sops/run/record.ts'
import { isParked } from '../../sops/run/states.ts'
import type { EngineContext } from './context.ts'
import { summary } from './summary.ts'

/** Runs parked at a gate, oldest first. */
export function pending(ctx: EngineContext): RunSummary[] {
  return [...ctx.live.values()]
    .filter((r) => isParked(r.state))
    .map(summary)
    .sort((a, b) => a.createdAt - b.createdAt)
}

export function liveRuns(ctx: EngineContext): RunSummary[] {
  return [...ctx.live.values()].map(summary).sort((a, b) => a.createdAt - b.createdAt)
}

export async function getRun(ctx: EngineContext, runId: string): Promise<RunRecord | undefined> {
  return ctx.live.get(runId) ?? ctx.finishing.get(runId) ?? (await ctx.store.getRun(runId))
}

/** From the run index (store.ts); the live runs from memory, which may be ahead of the store. */
export function queryRuns(ctx: EngineContext, filter: RunFilter = {}): Promise<RunPage> {
  return ctx.store.queryRuns(filter, [...ctx.live.values(), ...ctx.finishing.values()].map(summary))
}

export async function logs(ctx: EngineContext, runId: string): Promise<LogEntry[] | undefined> {
  return (await getRun(ctx, runId))?.log
}

export function keptTriggers(ctx: EngineContext): KeptTrigger[] {
  return [...ctx.kept.values()].flat()
}
