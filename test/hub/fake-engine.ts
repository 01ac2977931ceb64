// A tiny Engine that records what the router hands it (unit tests of the router only; the
// end-to-end test uses the real engine).
import type { AdmissionDecision, Engine, TriggerEvent } from '../../sops/engine-api.ts'
import type { Sop, Trigger } from '../../sops/types.ts'

export interface RecordingEngine extends Engine {
  calls: { sop: string; event: TriggerEvent }[]
  /** Resolves when `n` calls have been recorded. */
  waitFor(n: number): Promise<void>
}

export function recordingEngine(
  decide?: (sop: string, event: TriggerEvent) => AdmissionDecision,
): RecordingEngine {
  const calls: { sop: string; event: TriggerEvent }[] = []
  const waiters: { n: number; resolve: () => void }[] = []
  return {
    calls,
    async trigger(sop, event) {
      calls.push({ sop, event })
      for (const w of waiters.filter((w) => calls.length >= w.n)) w.resolve()
      return decide
        ? decide(sop, event)
        : { outcome: 'started', runId: `run-${calls.length}`, reason: 'slot free' }
    },
    waitFor(n) {
      if (calls.length >= n) return Promise.resolve()
      return new Promise((resolve) => waiters.push({ n, resolve }))
    },
  }
}

/** A trigger without its origin (one is made up), distributed over the union. */
export type TriggerInput = Trigger extends infer T ? (T extends Trigger ? Omit<T, 'origin'> : never) : never

let line = 0
export function sop(name: string, triggers: TriggerInput[]): Sop {
  return {
    name,
    description: name,
    priority: 'normal',
    executionMode: 'auto',
    cooldownSecs: 0,
    maxConcurrent: 1,
    admissionPolicy: 'parallel',
    agent: 'test',
    triggers: triggers.map(
      (t) => ({ origin: { file: `/sops/${name}/SOP.toml`, line: ++line }, ...t }) as Trigger,
    ),
    steps: [],
    dir: `/sops/${name}`,
    tomlPath: `/sops/${name}/SOP.toml`,
    mdPath: `/sops/${name}/SOP.md`,
  }
}
