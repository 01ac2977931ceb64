// The backlog of kept triggers per SOP (SOP-NOTES: Admission: `hold` keeps a trigger until no run
// of the SOP is active or parked, `parallel` defers one until a slot frees): how many wait and
// since when, for the console's held backlog and `svc sop held`. Pure: ages are the caller's
// `now` minus these times.
import type { KeptTrigger } from '../engine-api.ts'

export interface KeptBacklog {
  sop: string
  held: number
  deferred: number
  /** Arrival of the oldest and newest kept trigger (ms since the epoch). */
  oldestAt: number
  newestAt: number
}

/** One row per SOP with anything kept, by SOP name. */
export function keptBacklog(kept: readonly KeptTrigger[]): KeptBacklog[] {
  const by = new Map<string, KeptBacklog>()
  for (const k of kept) {
    let b = by.get(k.sop)
    if (!b) by.set(k.sop, (b = { sop: k.sop, held: 0, deferred: 0, oldestAt: k.at, newestAt: k.at }))
    b[k.kind]++
    if (k.at < b.oldestAt) b.oldestAt = k.at
    if (k.at > b.newestAt) b.newestAt = k.at
  }
  return [...by.values()].sort((a, b) => (a.sop < b.sop ? -1 : a.sop > b.sop ? 1 : 0))
}
