// The engine's live runs keep each SOP's active and parked counts (hub/engine/live-runs.ts):
// what admission reads for every event, checked here against a count by scan.
import t from 'tap'
import { LiveRuns } from '../../hub/engine/live-runs.ts'
import type { RunRecord } from '../../sops/run/record.ts'
import { RUN_STATES, type RunState, holdsSlot, isParked } from '../../sops/run/states.ts'

const run = (id: string, sop: string, state: RunState) => ({ id, sop, state }) as unknown as RunRecord

function scan(runs: Map<string, RunRecord>, sop: string) {
  let active = 0
  let parked = 0
  for (const r of runs.values()) {
    if (r.sop !== sop) continue
    if (holdsSlot(r.state)) active++
    else if (isParked(r.state)) parked++
  }
  return { active, parked }
}

t.test('counts follow adds, moves and deletes (a seeded walk against a scan)', async (t) => {
  const live = new LiveRuns()
  const mirror = new Map<string, RunRecord>()
  let seed = 19
  const rand = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2147483648
    return seed % n
  }
  const sops = ['a', 'b', 'c']
  for (let i = 0; i < 5000; i++) {
    const op = rand(3)
    const id = `r${rand(200)}`
    const had = mirror.get(id)
    if (op === 0 || !had) {
      const r = run(id, sops[rand(3)]!, RUN_STATES[rand(RUN_STATES.length)]!)
      live.add(r)
      mirror.set(id, r)
    } else if (op === 1) {
      const from = had.state
      had.state = RUN_STATES[rand(RUN_STATES.length)]!
      live.moved(had, from)
    } else {
      live.delete(id)
      mirror.delete(id)
    }
    for (const s of sops)
      if (i % 97 === 0 || i === 4999) t.same(live.slots(s), scan(mirror, s), `step ${i}, SOP ${s}`)
  }
  t.equal(live.size, mirror.size)
})

t.test('a run not in the set, or moved to its own state, changes nothing', async (t) => {
  const live = new LiveRuns()
  const r = run('x', 'a', 'running')
  live.add(r)
  live.moved(run('y', 'a', 'running'), 'pending')
  live.moved(r, 'running')
  t.same(live.slots('a'), { active: 1, parked: 0 })
  live.delete('nope')
  t.same(live.slots('a'), { active: 1, parked: 0 })
  t.same(live.slots('other'), { active: 0, parked: 0 })
})
