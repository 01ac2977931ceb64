// The engine's unfinished runs, with each SOP's active and parked counts kept as runs come, move
// and go. Admission reads the counts for every event (sops/run/admission.ts), and a burst keeps
// thousands of runs live at once: counting them by a scan made admission quadratic in the burst
// (bench/README.md, peer).
import type { RunRecord } from '../../sops/run/record.ts'
import { holdsSlot, isParked, type RunState } from '../../sops/run/states.ts'

export interface SlotCounts {
  active: number
  parked: number
}

export class LiveRuns {
  private readonly runs = new Map<string, RunRecord>()
  private readonly counts = new Map<string, SlotCounts>()

  get size(): number {
    return this.runs.size
  }

  get(id: string): RunRecord | undefined {
    return this.runs.get(id)
  }

  values(): IterableIterator<RunRecord> {
    return this.runs.values()
  }

  add(run: RunRecord): void {
    const had = this.runs.get(run.id)
    if (had) this.count(had.sop, had.state, -1)
    this.runs.set(run.id, run)
    this.count(run.sop, run.state, 1)
  }

  delete(id: string): void {
    const run = this.runs.get(id)
    if (!run) return
    this.runs.delete(id)
    this.count(run.sop, run.state, -1)
  }

  /** Call after a live run's state changed from `from`. */
  moved(run: RunRecord, from: RunState): void {
    if (this.runs.get(run.id) !== run || from === run.state) return
    this.count(run.sop, from, -1)
    this.count(run.sop, run.state, 1)
  }

  /** The SOP's runs holding a slot and parked at a gate (sops/run/states.ts). */
  slots(sop: string): SlotCounts {
    const c = this.counts.get(sop)
    return c ? { active: c.active, parked: c.parked } : { active: 0, parked: 0 }
  }

  private count(sop: string, state: RunState, by: 1 | -1): void {
    const active = holdsSlot(state)
    if (!active && !isParked(state)) return
    let c = this.counts.get(sop)
    if (!c) this.counts.set(sop, (c = { active: 0, parked: 0 }))
    if (active) c.active += by
    else c.parked += by
    if (c.active === 0 && c.parked === 0) this.counts.delete(sop)
  }
}
