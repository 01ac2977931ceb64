// Admission (sops/RUNTIME.md, "Admission"): every policy, cooldown, and every decision
// recorded with its reason. A `block` tool keeps a run in flight until the test releases it.
import t from 'tap'
import { admit } from '../../sops/run/admission.ts'
import { waitFor } from '../helpers/wait.ts'
import { call, event, sop, step } from './helpers.ts'
import { startEngine } from './engine-helpers.ts'

/** One step that blocks until the test releases it. */
const oneBlock = (over: Partial<ReturnType<typeof sop>> = {}) =>
  sop({ steps: [step(1, { calls: [call('block')] })], ...over })

t.test('parallel: defers when no slot is free, runs the deferred trigger when one frees', async (t) => {
  const { engine, tools } = await startEngine(t, [
    oneBlock({ admissionPolicy: 'parallel', maxConcurrent: 2 }),
  ])
  const a = await engine.trigger('test-sop', event({ i: 1 }))
  const b = await engine.trigger('test-sop', event({ i: 2 }))
  const c = await engine.trigger('test-sop', event({ i: 3 }))
  t.same([a.outcome, b.outcome, c.outcome], ['started', 'started', 'deferred'])
  t.match(c.reason, /parallel: no slot free \(2\/2 active\)/)
  t.equal(engine.keptTriggers().length, 1)
  await waitFor(() => tools.blockedCount() === 2, 'two blocked calls')
  tools.release()
  await waitFor(() => tools.blockedCount() === 1, 'the deferred run to start')
  t.equal(engine.keptTriggers().length, 0)
  tools.release()
  await engine.idle()
  const runs = await engine.listRuns({ state: 'completed' })
  t.equal(runs.length, 3)
  const third = runs.find((r) => r.id !== a.runId && r.id !== b.runId)!
  t.same((await engine.getRun(third.id))?.trigger.payload, { i: 3 })
})

t.test('parked runs hold no slot: a deferred trigger runs while the first waits for approval', async (t) => {
  const s = sop({ steps: [step(1, { requiresConfirmation: true, calls: [call('echo')] })] })
  const { engine } = await startEngine(t, [s])
  const a = await engine.trigger('test-sop', event())
  await engine.idle()
  const b = await engine.trigger('test-sop', event())
  t.equal(b.outcome, 'started', 'slot is free while run a is parked')
  await engine.idle()
  t.equal(engine.pending().length, 2)
  void a
})

t.test(
  'hold: admits only when no run of this SOP is active or parked, keeps the trigger until then',
  async (t) => {
    const s = sop({
      admissionPolicy: 'hold',
      maxConcurrent: 3,
      steps: [step(1, { requiresConfirmation: true, calls: [call('echo')] })],
    })
    const { engine } = await startEngine(t, [s])
    const a = await engine.trigger('test-sop', event({ i: 1 }))
    await engine.idle()
    const b = await engine.trigger('test-sop', event({ i: 2 }))
    t.equal(b.outcome, 'held')
    t.match(b.reason, /hold: 0 active and 1 parked/)
    t.equal(engine.keptTriggers()[0]?.kind, 'held')
    await engine.approve(a.runId!)
    await engine.idle()
    t.equal(engine.keptTriggers().length, 0, 'released when run a finished')
    t.match(engine.pending(), [{ state: 'waiting_approval' }])
  },
)

t.test('coalesce: folds the trigger into the run in flight, recorded on that run', async (t) => {
  const { engine, tools } = await startEngine(t, [oneBlock({ admissionPolicy: 'coalesce' })])
  const a = await engine.trigger('test-sop', event({ i: 1 }))
  const b = await engine.trigger('test-sop', event({ i: 2 }))
  t.equal(b.outcome, 'coalesced')
  t.equal(b.runId, a.runId)
  t.match(b.reason, /the run in flight covers it/)
  await waitFor(() => tools.blockedCount() === 1, 'blocked call')
  tools.release()
  await engine.idle()
  const run = await engine.getRun(a.runId!)
  t.match(run?.coalesced, [{ payload: { i: 2 } }])
  t.equal(run?.coalescedCount, 1)
  t.equal((await engine.listRuns()).length, 1, 'no second run')
})

t.test('drop: discards when no slot is free', async (t) => {
  const { engine, tools } = await startEngine(t, [oneBlock({ admissionPolicy: 'drop' })])
  await engine.trigger('test-sop', event())
  const b = await engine.trigger('test-sop', event())
  t.equal(b.outcome, 'dropped')
  t.match(b.reason, /drop: no slot free/)
  t.equal(engine.keptTriggers().length, 0)
  await waitFor(() => tools.blockedCount() === 1, 'blocked call')
  tools.release()
  await engine.idle()
  t.equal((await engine.listRuns()).length, 1)
})

t.test(
  'cooldown: a trigger inside cooldown_secs after the last finished run is dropped with that reason',
  async (t) => {
    let now = 1_000_000
    const s = sop({ cooldownSecs: 30, steps: [step(1, { calls: [call('echo')] })] })
    const { engine } = await startEngine(t, [s], { now: () => now })
    t.equal((await engine.trigger('test-sop', event())).outcome, 'started')
    await engine.idle()
    now += 10_000
    const b = await engine.trigger('test-sop', event())
    t.equal(b.outcome, 'cooldown')
    t.match(b.reason, /cooldown: 20s of cooldown_secs=30 left/)
    now += 20_000
    t.equal((await engine.trigger('test-sop', event())).outcome, 'started')
    await engine.idle()
  },
)

t.test(
  'every decision is recorded durably with its reason, unknown SOPs and bad events included',
  async (t) => {
    const { engine, tools } = await startEngine(t, [oneBlock({ admissionPolicy: 'drop' })])
    await engine.trigger('test-sop', event())
    await engine.trigger('test-sop', event())
    const unknown = await engine.trigger('nope', event())
    t.match(unknown, { outcome: 'dropped', reason: 'no SOP named "nope" is loaded' })
    const bad = await engine.trigger('test-sop', { type: 'manual', source: 'x', at: Number.NaN, payload: 1 })
    t.match(bad, { outcome: 'dropped', reason: /bad trigger event: at is not a number/ })
    await waitFor(() => tools.blockedCount() === 1, 'blocked call')
    tools.release()
    await engine.idle()
    const recs = await engine.admissions()
    t.match(recs, [
      { sop: 'test-sop', outcome: 'started', reason: /slot free/ },
      { sop: 'test-sop', outcome: 'dropped', reason: /drop: no slot free/ },
      { sop: 'nope', outcome: 'dropped', reason: /no SOP named/ },
    ])
  },
)

t.test('pure admit(): policies with a free slot all start; cooldown comes first', async (t) => {
  for (const p of ['parallel', 'coalesce', 'drop', 'hold'] as const) {
    t.equal(
      admit(sop({ admissionPolicy: p, steps: [] }), { active: 0, parked: 0, now: 0 }).outcome,
      'started',
      p,
    )
  }
  t.equal(
    admit(sop({ admissionPolicy: 'hold', maxConcurrent: 4, steps: [] }), { active: 1, parked: 0, now: 0 })
      .outcome,
    'held',
  )
  t.equal(
    admit(sop({ cooldownSecs: 5, steps: [] }), { active: 0, parked: 0, now: 1000, lastFinishedAt: 0 })
      .outcome,
    'cooldown',
  )
  t.equal(
    admit(sop({ cooldownSecs: 5, steps: [] }), { active: 0, parked: 0, now: 5000, lastFinishedAt: 0 })
      .outcome,
    'started',
  )
})
