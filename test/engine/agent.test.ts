// Steps that need a model go to an OpenAI-compatible endpoint, tested
// against a real local HTTP server.
import t from 'tap'
import { completionsUrl, createOpenAiAgent } from '../../hub/agent/openai.ts'
import { call, event, sop, step } from './helpers.ts'
import { startEngine } from './engine-helpers.ts'
import { fakeOpenAi, message } from './fake-openai.ts'

t.test('with no agent configured, a step with no call fails with "no agent configured"', async (t) => {
  const { engine } = await startEngine(t, [sop({ steps: [step(1)] })])
  const d = await engine.trigger('test-sop', event())
  await engine.idle()
  const run = await engine.getRun(d.runId!)
  t.equal(run?.state, 'failed')
  t.match(run?.error, /no agent configured/)
})

t.test('an agent step: the model calls an allowed tool through the engine, then answers', async (t) => {
  const srv = await fakeOpenAi(t, [
    message(null, [
      { name: 'echo', args: { said: 'hi' } },
      { name: 'fail', args: {} },
    ]),
    message('{"done": true}'),
  ])
  const agent = createOpenAiAgent({ url: srv.url, model: 'tiny' })
  const s = sop({
    agent: 'vendor',
    steps: [
      step(1, {
        title: 'greet',
        body: 'say hi',
        prompt: 'be brief',
        tools: ['echo', 'fail'],
        denyTools: ['fail'],
      }),
    ],
  })
  const { engine, tools } = await startEngine(t, [s], { agent })
  const d = await engine.trigger('test-sop', event({ who: 'bob' }))
  await engine.idle()
  const run = await engine.getRun(d.runId!)
  t.equal(run?.state, 'completed')
  t.same(run?.steps['1']?.output, { done: true })
  t.same(
    tools.calls.map((c) => c.tool),
    ['echo'],
    'the denied tool was refused, not called',
  )
  t.equal(srv.requests.length, 2)
  t.equal(srv.requests[0]?.model, 'tiny')
  t.same(
    (srv.requests[0]!.tools as { function: { name: string } }[]).map((x) => x.function.name),
    ['echo'],
    'only allowed tools offered',
  )
  t.match(srv.requests[0]?.messages[1]?.content, /greet[\s\S]*say hi[\s\S]*be brief[\s\S]*"who":"bob"/)
  const toolMsgs = srv.requests[1]!.messages.filter((m) => m.role === 'tool').map((m) => m.content)
  t.match(toolMsgs, [/"said":"hi"/, /denied by deny-tools/])
})

t.test('endpoint errors fail the step with what went wrong', async (t) => {
  const bad = await fakeOpenAi(t, [{ status: 500, body: 'overloaded' }])
  const r1 = await createOpenAiAgent({ url: bad.url, model: 'm' }).decide({
    sop: { name: 's', description: '' },
    question: 'q?',
    trigger: event(),
    signal: new AbortController().signal,
  })
  t.match(r1, { ok: false, code: 'UPSTREAM_FAILED', error: /answered 500: overloaded/ })
  const junk = await fakeOpenAi(t, [{ body: 'not json' }, { body: { nothing: 1 } }, message('maybe')])
  const a = createOpenAiAgent({ url: junk.url + '/chat/completions', model: 'm' })
  const req = {
    sop: { name: 's', description: '' },
    question: 'q?',
    trigger: event(),
    signal: new AbortController().signal,
  }
  t.match(await a.decide(req), { ok: false, code: 'UPSTREAM_FAILED', error: /not JSON/ })
  t.match(await a.decide(req), { ok: false, code: 'UPSTREAM_FAILED', error: /no choices\[0\]\.message/ })
  t.match(await a.decide(req), { ok: false, code: 'UPSTREAM_FAILED', error: /neither yes nor no: "maybe"/ })
  const down = createOpenAiAgent({ url: 'http://127.0.0.1:1/v1', model: 'm' })
  t.match(await down.decide(req), { ok: false, code: 'UNREACHABLE', error: /unreachable/ })
  t.equal(completionsUrl('http://h/v1/'), 'http://h/v1/chat/completions')
})

t.test('a model that never stops calling tools fails the step after maxRounds', async (t) => {
  const srv = await fakeOpenAi(t, [message(null, [{ name: 'echo', args: {} }])])
  const agent = createOpenAiAgent({ url: srv.url, model: 'm', maxRounds: 3 })
  const { engine } = await startEngine(t, [sop({ steps: [step(1)] })], { agent })
  const d = await engine.trigger('test-sop', event())
  await engine.idle()
  t.match((await engine.getRun(d.runId!))?.error, /still calling tools after 3 rounds/)
})

t.test('an agent reply cannot pass a gate: requires_confirmation still waits for an operator', async (t) => {
  const srv = await fakeOpenAi(t, [message('approved, go ahead')])
  const agent = createOpenAiAgent({ url: srv.url, model: 'm' })
  const s = sop({ steps: [step(1), step(2, { requiresConfirmation: true, calls: [call('echo')] })] })
  const { engine, tools } = await startEngine(t, [s], { agent })
  const d = await engine.trigger('test-sop', event())
  await engine.idle()
  t.equal((await engine.getRun(d.runId!))?.state, 'waiting_approval')
  t.equal(tools.calls.length, 0)
})
