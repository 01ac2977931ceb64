// What GET /metrics counts that no other part of the hub keeps: events handed to admission by
// trigger kind and outcome, and runs started and finished per SOP. Everything else on /metrics
// is read from its own source at scrape time (snapshot.ts). Plain Maps of numbers, so the cost
// on the event path is one Map update per admission and per run change; prom-client (its label
// hashing, its objects) is never touched there.
import type { AdmissionOutcome } from '../../sops/engine-api.ts'
import type { HubEngine } from '../../sops/hub-engine.ts'
import { isFinished } from '../../sops/run/states.ts'
import { TRIGGER_TYPES } from '../../sops/types.ts'

/** The outcomes an event is counted under: the engine's, a redelivery recognised, or a throw. */
export type CountedOutcome = AdmissionOutcome | 'duplicate' | 'error'

export interface HubCounts {
  /** Events by `kind\0outcome`; kind is a trigger type, or `other` for a malformed event. */
  events: ReadonlyMap<string, number>
  /** Runs started since the hub started, by SOP. */
  runsStarted: ReadonlyMap<string, number>
  /** Runs finished since the hub started, by `sop\0state` (completed, failed, cancelled). */
  runsFinished: ReadonlyMap<string, number>
}

export const KEY_SEP = '\u0000'

const KINDS: ReadonlySet<string> = new Set(TRIGGER_TYPES)

function bump(map: Map<string, number>, key: string): void {
  map.set(key, (map.get(key) ?? 0) + 1)
}

/**
 * Starts counting on `engine`. Its `trigger` is replaced on the instance by one that counts each
 * decision, so every caller (the router, the local API, the console, `sop_execute`) is counted
 * without any of them knowing. Runs come from `engine.watch`: a run is counted as started the
 * first time it is seen unfinished (runs unfinished when counting starts are not), and as
 * finished once, when its final change is stored. Call it before any trigger source starts.
 */
export function countEngine(engine: HubEngine): HubCounts {
  const events = new Map<string, number>()
  const runsStarted = new Map<string, number>()
  const runsFinished = new Map<string, number>()

  const trigger = engine.trigger.bind(engine)
  engine.trigger = (sop, event) => {
    const type = (event as { type?: unknown } | null | undefined)?.type
    const kind = typeof type === 'string' && KINDS.has(type) ? type : 'other'
    return trigger(sop, event).then(
      (d) => {
        bump(events, kind + KEY_SEP + (d.duplicate ? 'duplicate' : d.outcome))
        return d
      },
      (err: unknown) => {
        bump(events, `${kind}${KEY_SEP}error`)
        throw err
      },
    )
  }

  // Ids of the runs seen unfinished: as many as the engine holds in memory itself.
  const live = new Set(engine.liveRuns().map((r) => r.id))
  engine.watch((change) => {
    if (change.kind !== 'run') return
    const r = change.run
    if (isFinished(r.state)) {
      live.delete(r.id)
      bump(runsFinished, r.sop + KEY_SEP + r.state)
    } else if (!live.has(r.id)) {
      live.add(r.id)
      bump(runsStarted, r.sop)
    }
  })
  return { events, runsStarted, runsFinished }
}
