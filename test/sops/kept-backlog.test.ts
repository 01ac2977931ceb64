// The held/deferred backlog per SOP (sops/run/kept-backlog.ts), pure.
import t from 'tap'
import type { KeptTrigger } from '../../sops/engine-api.ts'
import { keptBacklog } from '../../sops/run/kept-backlog.ts'
import { event } from '../engine/helpers.ts'

const kept = (sop: string, kind: KeptTrigger['kind'], at: number): KeptTrigger => ({
  key: `${sop}-${at}`,
  sop,
  kind,
  event: event({}, at),
  reason: kind,
  at,
})

t.test('counts and oldest/newest per SOP, by name', async (t) => {
  t.same(keptBacklog([]), [])
  const rows = keptBacklog([
    kept('vend', 'held', 300),
    kept('alarm', 'deferred', 50),
    kept('vend', 'held', 100),
    kept('vend', 'deferred', 200),
    kept('alarm', 'deferred', 70),
  ])
  t.same(rows, [
    { sop: 'alarm', held: 0, deferred: 2, oldestAt: 50, newestAt: 70 },
    { sop: 'vend', held: 2, deferred: 1, oldestAt: 100, newestAt: 300 },
  ])
})
