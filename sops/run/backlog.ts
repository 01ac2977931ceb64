// The backlog of kept triggers per SOP (sops/RUNTIME.md, "Kept triggers": `hold` keeps a trigger while a
// run is in flight, `parallel` defers one past max_concurrent): how many wait, since when, and
// why. Pure: the engine's kept triggers and the time in, the summary out.
import type { KeptTrigger } from '../engine-api.ts'

export interface SopBacklog {
  sop: string
  count: number
  /** Kept by the `hold` policy. */
  held: number
  /** Kept by the `parallel` policy past max_concurrent (or a cooldown). */
  deferred: number
  /** Arrival of the oldest and the newest kept trigger (ms since the epoch). */
  oldestAt: number
  newestAt: number
  oldestAgeMs: number
  newestAgeMs: number
  /** Why the newest one was kept, as the engine said it. */
  reason: string
}

/** Per SOP, the one with the oldest waiting trigger first. */
export function backlog(kept: readonly KeptTrigger[], now: number): SopBacklog[] {
  const by = new Map<string, SopBacklog>()
  for (const k of kept) {
    let b = by.get(k.sop)
    if (!b) {
      b = {
        sop: k.sop,
        count: 0,
        held: 0,
        deferred: 0,
        oldestAt: k.at,
        newestAt: k.at,
        oldestAgeMs: 0,
        newestAgeMs: 0,
        reason: k.reason,
      }
      by.set(k.sop, b)
    }
    b.count++
    b[k.kind]++
    if (k.at < b.oldestAt) b.oldestAt = k.at
    if (k.at >= b.newestAt) {
      b.newestAt = k.at
      b.reason = k.reason
    }
  }
  const out = [...by.values()]
  for (const b of out) {
    b.oldestAgeMs = Math.max(0, now - b.oldestAt)
    b.newestAgeMs = Math.max(0, now - b.newestAt)
  }
  return out.sort((a, b) => a.oldestAt - b.oldestAt || (a.sop < b.sop ? -1 : 1))
}
