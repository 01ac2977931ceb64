// decide:/unless_decided: (sops/RUNTIME.md, "Decide questions"). Answered at run start by
// the agent where one is configured (never in deterministic runs), else as a condition over the
// trigger, else by the operator with the run's first approval.
import t from 'tap'
import { createOpenAiAgent } from '../../hub/agent/openai.ts'
import { call, event, sop, step } from './helpers.ts'
import { startEngine } from './engine-helpers.ts'
import { fakeOpenAi, message } from './fake-openai.ts'

const steps = (question: string) => [
  step(1, { calls: [call('echo', { s: 1 })] }),
  step(2, { decide: question, calls: [call('echo', { s: 2 })] }),
  step(3, { unlessDecided: 2, calls: [call('echo', { s: 3 })] }),
]

t.test('a question written as a condition is evaluated over the trigger (no agent)', async (t) => {
  for (const [amount, ran] of [
    [50, [1, 2]],
    [5, [1, 3]],
  ] as const) {
    const { engine, tools } = await startEngine(t, [
      sop({ executionMode: 'deterministic', steps: steps('$.amount > 20') }),
    ])
    const d = await engine.trigger('test-sop', event({ amount }))
    await engine.idle()
    const run = await engine.getRun(d.runId!)
    t.equal(run?.state, 'completed')
    t.same(
      tools.calls.map((c) => (c.args as { s: number }).s),
      ran,
      `amount ${amount}`,
    )
    t.equal(run?.decidedBy['2'], 'condition over the trigger')
    const skipped = amount > 20 ? '3' : '2'
    t.equal(run?.steps[skipped]?.status, 'skipped')
    t.match(
      run?.steps[skipped]?.reason,
      amount > 20 ? /unless_decided: step 2/ : /decide: .* was answered no/,
    )
  }
})

t.test("any other question goes to the operator with the run's first approval", async (t) => {
  const { engine, tools } = await startEngine(t, [
    sop({ executionMode: 'auto', steps: steps('is the customer a regular?') }),
  ])
  const d = await engine.trigger('test-sop', event())
  await engine.idle()
  const p = engine.pending()
  t.match(p, [
    { gate: { kind: 'decision', questions: [{ step: 2, question: 'is the customer a regular?' }] } },
  ])
  t.equal(tools.calls.length, 0)
  const missing = await engine.approve(d.runId!)
  t.match(missing, { ok: false, error: /needs an answer to step 2's question "is the customer a regular\?"/ })
  t.equal(engine.pending().length, 1, 'a refused approval changes nothing')
  t.equal((await engine.approve(d.runId!, { by: 'ann', decisions: { 2: true } })).ok, true)
  await engine.idle()
  const run = await engine.getRun(d.runId!)
  t.equal(run?.state, 'completed')
  t.same(
    tools.calls.map((c) => (c.args as { s: number }).s),
    [1, 2],
  )
  t.equal(run?.decidedBy['2'], 'operator ann')
})

t.test('the operator question rides on the supervised approval (one approval, not two)', async (t) => {
  const { engine, tools } = await startEngine(t, [
    sop({ executionMode: 'supervised', steps: steps('restock first?') }),
  ])
  const d = await engine.trigger('test-sop', event())
  await engine.idle()
  t.match(engine.pending(), [{ gate: { kind: 'approval', reason: /supervised/, questions: [{ step: 2 }] } }])
  await engine.approve(d.runId!, { decisions: { 2: false } })
  await engine.idle()
  t.equal((await engine.getRun(d.runId!))?.state, 'completed')
  t.same(
    tools.calls.map((c) => (c.args as { s: number }).s),
    [1, 3],
  )
})

t.test('with an agent configured, the agent answers (and deterministic runs never ask it)', async (t) => {
  const srv = await fakeOpenAi(t, [message('Yes.')])
  const agent = createOpenAiAgent({ url: srv.url, model: 'm' })
  const { engine, tools } = await startEngine(
    t,
    [sop({ executionMode: 'auto', steps: steps('is it urgent?') })],
    { agent },
  )
  const d = await engine.trigger('test-sop', event({ text: 'fire!' }))
  await engine.idle()
  const run = await engine.getRun(d.runId!)
  t.equal(run?.decidedBy['2'], 'agent')
  t.same(
    tools.calls.map((c) => (c.args as { s: number }).s),
    [1, 2],
  )
  t.match(srv.requests[0]?.messages[1]?.content, /is it urgent\?[\s\S]*fire!/)

  const det = await startEngine(t, [sop({ executionMode: 'deterministic', steps: steps('$.n == 1') })], {
    agent,
  })
  const d2 = await det.engine.trigger('test-sop', event({ n: 1 }))
  await det.engine.idle()
  t.equal((await det.engine.getRun(d2.runId!))?.decidedBy['2'], 'condition over the trigger')
  t.equal(srv.requests.length, 1, 'no model round-trip for the deterministic run')
})

t.test('an agent that cannot answer fails the run with the reason', async (t) => {
  const srv = await fakeOpenAi(t, [message('perhaps')])
  const agent = createOpenAiAgent({ url: srv.url, model: 'm' })
  const { engine, tools } = await startEngine(
    t,
    [sop({ executionMode: 'auto', steps: steps('is it urgent?') })],
    { agent },
  )
  const d = await engine.trigger('test-sop', event())
  await engine.idle()
  t.match(
    (await engine.getRun(d.runId!))?.error,
    /step 2: the agent could not answer decide: "is it urgent\?": .*neither yes nor no/,
  )
  t.equal(tools.calls.length, 0)
})
