// Execution modes and approval gates (sops/RUNTIME.md, "Approval gates").
import t from 'tap'
import { call, event, sop, step } from './helpers.ts'
import { startEngine } from './engine-helpers.ts'

const three = (over: Parameters<typeof step>[1] = {}) =>
  [1, 2, 3].map((n) => step(n, { calls: [call('echo', { n })], ...over }))

t.test('auto: every step runs without approval', async (t) => {
  const { engine, tools } = await startEngine(t, [sop({ executionMode: 'auto', steps: three() })])
  const d = await engine.trigger('test-sop', event())
  await engine.idle()
  t.equal((await engine.getRun(d.runId!))?.state, 'completed')
  t.equal(tools.calls.length, 3)
  t.same(engine.pending(), [])
})

t.test('supervised: one approval before the run, then every step runs', async (t) => {
  const { engine, tools } = await startEngine(t, [sop({ executionMode: 'supervised', steps: three() })])
  const d = await engine.trigger('test-sop', event())
  await engine.idle()
  const p = engine.pending()
  t.equal(p.length, 1)
  t.equal(p[0]?.state, 'waiting_approval')
  t.match(p[0]?.gate, { step: 1, kind: 'approval', reason: /supervised/ })
  t.equal(tools.calls.length, 0, 'nothing ran before the approval')
  const r = await engine.approve(d.runId!, { by: 'ops', note: 'go' })
  t.equal(r.ok, true)
  await engine.idle()
  const run = await engine.getRun(d.runId!)
  t.equal(run?.state, 'completed')
  t.equal(tools.calls.length, 3)
  t.match(run?.approvals, [{ step: 1, decision: 'approved', by: 'ops', note: 'go' }])
})

t.test('step_by_step: approval before each step', async (t) => {
  const { engine, tools } = await startEngine(t, [sop({ executionMode: 'step_by_step', steps: three() })])
  const d = await engine.trigger('test-sop', event())
  for (let i = 1; i <= 3; i++) {
    await engine.idle()
    t.equal(tools.calls.length, i - 1)
    t.match(engine.pending()[0]?.gate, { step: i, reason: /step_by_step/ })
    t.equal((await engine.approve(d.runId!)).ok, true)
  }
  await engine.idle()
  t.equal((await engine.getRun(d.runId!))?.state, 'completed')
  t.equal(tools.calls.length, 3)
})

t.test('priority_based: critical/high behave as auto, normal/low as supervised', async (t) => {
  for (const [priority, gated] of [
    ['critical', false],
    ['high', false],
    ['normal', true],
    ['low', true],
  ] as const) {
    const { engine } = await startEngine(t, [
      sop({ executionMode: 'priority_based', priority, steps: three() }),
    ])
    const d = await engine.trigger('test-sop', event())
    await engine.idle()
    t.equal((await engine.getRun(d.runId!))?.state, gated ? 'waiting_approval' : 'completed', priority)
  }
})

t.test('deterministic: outputs chain, a checkpoint pauses, approve resumes', async (t) => {
  const steps = [
    step(1, { calls: [call('echo', { v: 1 })] }),
    step(2, { kind: 'checkpoint', prompt: 'check the tray' }),
    step(3, { calls: [call('echo', { v: '{{steps.2.v}}' })] }),
  ]
  const { engine, tools } = await startEngine(t, [sop({ executionMode: 'deterministic', steps })])
  const d = await engine.trigger('test-sop', event())
  await engine.idle()
  const p = engine.pending()
  t.match(p, [
    { state: 'paused_checkpoint', gate: { step: 2, kind: 'checkpoint', prompt: 'check the tray' } },
  ])
  await engine.approve(d.runId!)
  await engine.idle()
  const run = await engine.getRun(d.runId!)
  t.equal(run?.state, 'completed')
  t.same(run?.steps['2']?.output, { v: 1 }, 'a checkpoint with no call passes its input on')
  t.same(
    tools.calls.map((c) => c.args),
    [{ v: 1 }, { v: 1 }],
  )
})

t.test('deterministic: deny at a checkpoint cancels the run', async (t) => {
  const { engine, tools } = await startEngine(t, [
    sop({
      executionMode: 'deterministic',
      steps: [step(1, { kind: 'checkpoint' }), step(2, { calls: [call('echo')] })],
    }),
  ])
  const d = await engine.trigger('test-sop', event())
  await engine.idle()
  const r = await engine.deny(d.runId!, { by: 'ops', note: 'tray empty' })
  t.equal(r.ok, true)
  const run = await engine.getRun(d.runId!)
  t.equal(run?.state, 'cancelled')
  t.match(run?.error, /denied by ops before step 1: tray empty/)
  t.equal(tools.calls.length, 0)
  t.same(engine.pending(), [])
})

t.test('deterministic: a step with no call fails the run with a clear reason', async (t) => {
  const { engine } = await startEngine(t, [
    sop({ executionMode: 'deterministic', steps: [step(1, { calls: [call('echo')] }), step(2)] }),
  ])
  const d = await engine.trigger('test-sop', event())
  await engine.idle()
  const run = await engine.getRun(d.runId!)
  t.equal(run?.state, 'failed')
  t.match(run?.error, /step 2 has no call: and a deterministic run makes no model round-trips/)
})

t.test('requires_confirmation asks in every mode, with the step prompt', async (t) => {
  for (const mode of ['auto', 'deterministic', 'priority_based'] as const) {
    const steps = [
      step(1, { calls: [call('echo')] }),
      step(2, { requiresConfirmation: true, prompt: 'really dispense?', calls: [call('echo')] }),
    ]
    const { engine, tools } = await startEngine(t, [
      sop({ executionMode: mode, priority: 'critical', steps }),
    ])
    const d = await engine.trigger('test-sop', event())
    await engine.idle()
    t.equal(tools.calls.length, 1, `${mode}: step 1 ran, step 2 waits`)
    t.match(engine.pending()[0]?.gate, {
      step: 2,
      kind: 'approval',
      prompt: 'really dispense?',
      reason: /requires_confirmation/,
    })
    await engine.approve(d.runId!)
    await engine.idle()
    t.equal((await engine.getRun(d.runId!))?.state, 'completed')
  }
})

t.test('mode: overrides per step', async (t) => {
  const steps = [
    step(1, { calls: [call('echo')] }),
    step(2, { mode: 'step_by_step', calls: [call('echo')] }),
    step(3, { calls: [call('echo')] }),
  ]
  const { engine, tools } = await startEngine(t, [sop({ executionMode: 'auto', steps })])
  const d = await engine.trigger('test-sop', event())
  await engine.idle()
  t.equal(tools.calls.length, 1)
  t.match(engine.pending()[0]?.gate, { step: 2 })
  await engine.approve(d.runId!)
  await engine.idle()
  t.equal(tools.calls.length, 3)
  const s3 = [
    step(1, { calls: [call('echo')] }),
    step(2, { mode: 'supervised', calls: [call('echo')] }),
    step(3, { calls: [call('echo')] }),
  ]
  const c = await startEngine(t, [sop({ executionMode: 'auto', steps: s3 })])
  const d3 = await c.engine.trigger('test-sop', event())
  await c.engine.idle()
  t.equal(c.tools.calls.length, 1, 'an auto SOP: step 1 ran; step 2 (its own mode: supervised) waits')
  t.match(c.engine.pending()[0]?.gate, { step: 2, reason: /supervised: this step asks/ })
  await c.engine.approve(d3.runId!)
  await c.engine.idle()
  t.equal(c.tools.calls.length, 3)
  t.equal((await c.engine.getRun(d3.runId!))?.state, 'completed')
})

// sops/RUNTIME.md, "Approval gates": an override may add a gate, never remove the run's approval.
t.test('a supervised SOP waits before any call even when step 1 says mode: auto', async (t) => {
  for (const [executionMode, priority] of [
    ['supervised', 'normal'],
    ['priority_based', 'normal'],
    ['priority_based', 'low'],
  ] as const) {
    const steps = [
      step(1, { mode: 'auto', calls: [call('echo', { n: 1 })] }),
      step(2, { mode: 'deterministic', calls: [call('echo', { n: 2 })] }),
    ]
    const { engine, tools } = await startEngine(t, [sop({ executionMode, priority, steps })])
    const d = await engine.trigger('test-sop', event())
    await engine.idle()
    const what = `${executionMode}/${priority}`
    t.equal(tools.calls.length, 0, `${what}: no call before the approval`)
    t.match(engine.pending(), [
      { state: 'waiting_approval', gate: { step: 1, reason: /supervised: approval before the run/ } },
    ])
    const r = await engine.approve(d.runId!)
    t.equal(r.ok, true)
    await engine.idle()
    t.equal(tools.calls.length, 2, `${what}: one approval, then both steps ran`)
    t.equal((await engine.getRun(d.runId!))?.state, 'completed')
  }
  const { engine, tools } = await startEngine(t, [
    sop({
      executionMode: 'priority_based',
      priority: 'high',
      steps: [step(1, { mode: 'auto', calls: [call('echo')] })],
    }),
  ])
  await engine.trigger('test-sop', event())
  await engine.idle()
  t.equal(tools.calls.length, 1, 'priority_based at high behaves as auto: no gate')
})

t.test('approve and deny refuse runs that are not waiting, and change nothing', async (t) => {
  const { engine } = await startEngine(t, [sop({ steps: three() })])
  t.match(await engine.approve('nope'), { ok: false, error: 'no run with id "nope"' })
  t.match(await engine.deny(''), { ok: false, error: /missing/ })
  const d = await engine.trigger('test-sop', event())
  await engine.idle()
  const before = await engine.getRun(d.runId!)
  t.match(await engine.approve(d.runId!), {
    ok: false,
    error: /is not waiting for approval \(it is completed\)/,
  })
  t.match(await engine.deny(d.runId!), { ok: false, error: /not waiting/ })
  t.same(await engine.getRun(d.runId!), before)
})

t.test(
  'two approvals (or an approval and a denial) racing: exactly one wins, the other is refused',
  async (t) => {
    const { engine, tools } = await startEngine(t, [sop({ executionMode: 'supervised', steps: three() })])
    const a = await engine.trigger('test-sop', event())
    const b = await engine.trigger('test-sop', event())
    await engine.idle()
    const [x, y] = await Promise.all([engine.approve(a.runId!), engine.approve(a.runId!)])
    t.same([x.ok, y.ok].sort(), [false, true])
    const [p, q] = await Promise.all([engine.deny(b.runId!), engine.approve(b.runId!)])
    t.same([p.ok, q.ok].sort(), [false, true])
    await engine.idle()
    t.equal((await engine.getRun(a.runId!))?.state, 'completed')
    t.equal((await engine.getRun(a.runId!))?.approvals.length, 1)
    t.equal(tools.calls.length, 3 + (q.ok ? 3 : 0), 'run a ran once; run b ran only if approved')
  },
)
