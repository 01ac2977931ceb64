// A run as the engine store writes and reads it back (hub/engine/store.ts, real LevelDB in a temp
// folder): every field survives whether it is at its start value or not, and a record written in
// the older layout, with every state field spelled out, is still read whole.
import { join } from 'node:path'
import { Level } from 'level'
import t from 'tap'
import { EngineStore } from '../../hub/engine/store.ts'
import { newRun, type RunRecord } from '../../sops/run/record.ts'
import { tempDir } from '../helpers/tmp.ts'

const T0 = Date.UTC(2026, 10, 25)

function run(id: string): RunRecord {
  return newRun({
    id,
    sop: 'press',
    mode: 'supervised',
    trigger: { type: 'mqtt', source: 'in/1', payload: '{"v":1}', at: T0 },
    first: 1,
    now: T0,
    admission: 'started',
  })
}

/** Writes what the engine would, closes the store, and reads the unfinished runs back. */
async function roundTrip(dir: string, writes: RunRecord[]): Promise<RunRecord[]> {
  const store = await EngineStore.open(dir)
  for (const r of writes) await store.write(store.runOps(r))
  await store.close()
  const again = await EngineStore.open(dir)
  try {
    return await again.unfinished()
  } finally {
    await again.close()
  }
}

t.test('a run at its start values reads back whole, and so does every field once set', async (t) => {
  const fresh = run('r-fresh')
  const [back] = await roundTrip(join(await tempDir(t), 'engine'), [structuredClone(fresh)])
  t.same(back, fresh, 'a new run, with nothing but defaults in its state')

  const busy = run('r-busy')
  const first = structuredClone(busy)
  busy.state = 'waiting_approval'
  busy.updatedAt = T0 + 5
  busy.decisions = { '2': true }
  busy.decidedBy = { '2': 'condition' }
  busy.runApproved = true
  busy.passedGates = [1]
  busy.approvals = [{ step: 1, by: 'ana', at: T0 + 3 } as RunRecord['approvals'][number]]
  busy.coalesced = [{ type: 'mqtt', source: 'in/2', payload: '2', at: T0 + 1 }]
  busy.coalescedCount = 3
  busy.gate = { step: 2, kind: 'approval', since: T0 + 4 } as RunRecord['gate']
  busy.error = 'something to say'
  const [back2] = await roundTrip(join(await tempDir(t), 'engine'), [first, structuredClone(busy)])
  t.same(back2, busy, 'every state field set away from its start value survives')

  // Back to start values in a later write: the latest state is what counts, not an older one.
  const reset = structuredClone(busy)
  reset.decisions = {}
  reset.decidedBy = {}
  reset.runApproved = false
  reset.passedGates = []
  reset.coalesced = []
  reset.coalescedCount = 0
  const [back3] = await roundTrip(join(await tempDir(t), 'engine'), [first, structuredClone(busy), reset])
  t.same(back3, reset, 'fields returned to their start values read as such')
})

t.test('a run written in the older layout, every state field spelled out, is read whole', async (t) => {
  const dir = join(await tempDir(t), 'engine')
  const r = run('r-old')
  r.decisions = { '1': false }
  const { id, mode, trigger, admission, steps: _s, log: _l, lastOutput: _o, ...st } = r
  const db = new Level<string, string>(dir, { valueEncoding: 'utf8' })
  await db.open()
  await db.batch([
    {
      type: 'put',
      key: `run!${id}!000000`,
      value: JSON.stringify({
        head: { id, sop: r.sop, mode, trigger, createdAt: r.createdAt, admission },
        st,
      }),
    },
    { type: 'put', key: `open!${id}`, value: '' },
  ])
  await db.close()
  const store = await EngineStore.open(dir)
  t.teardown(() => store.close())
  const [back] = await store.unfinished()
  t.same(back, r)
})
