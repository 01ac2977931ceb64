// The short form of a run that listings, pages and watchers carry (sops/hub-engine.ts RunSummary).
import type { RunSummary } from '../../sops/hub-engine.ts'
import type { RunRecord } from '../../sops/run/record.ts'

export function summary(
  run: Pick<
    RunRecord,
    'id' | 'sop' | 'state' | 'current' | 'createdAt' | 'updatedAt' | 'finishedAt' | 'gate' | 'error'
  >,
): RunSummary {
  return {
    id: run.id,
    sop: run.sop,
    state: run.state,
    current: run.current,
    createdAt: run.createdAt,
    updatedAt: run.updatedAt,
    ...(run.finishedAt !== undefined ? { finishedAt: run.finishedAt } : {}),
    ...(run.gate ? { gate: run.gate } : {}),
    ...(run.error !== undefined ? { error: run.error } : {}),
  }
}
