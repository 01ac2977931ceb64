// Calls and data: templates, contracts, allow/deny, schemas, retry/goto, visit cap.
import t from 'tap'
import { call, event, sop, step } from './helpers.ts'
import { startEngine } from './engine-helpers.ts'

async function runOne(
  t: Parameters<typeof startEngine>[0],
  steps: ReturnType<typeof step>[],
  payload: unknown = {},
  flaky = 0,
) {
  const { memoryTools } = await import('./helpers.ts')
  const { engine, tools } = await startEngine(t, [sop({ steps })], {
    tools: memoryTools({ flakyFailures: flaky }),
  })
  const d = await engine.trigger('test-sop', event(payload as never))
  await engine.idle()
  return { run: (await engine.getRun(d.runId!))!, tools, engine }
}

t.test('step and call templates resolve from captured outputs, keeping types when whole', async (t) => {
  const { run, tools } = await runOne(t, [
    step(1, { calls: [call('echo', { sku: 'A1', qty: 2 })] }),
    step(2, {
      calls: [
        call('echo', { first: '{{steps.1.qty}}' }),
        call('other', { again: '{{calls.0.first}}', text: 'sku={{steps.1.sku}} n={{steps.1.qty}}' }),
      ],
    }),
  ])
  t.equal(run.state, 'completed')
  t.same(
    tools.calls.map((c) => c.args),
    [{ sku: 'A1', qty: 2 }, { first: 2 }, { again: 2, text: 'sku=A1 n=2' }],
  )
  t.same(run.steps['2']?.calls, [{ first: 2 }, { again: 2, text: 'sku=A1 n=2' }])
  t.same(
    tools.calls.map((c) => c.ctx.idempotencyKey),
    [`${run.id}:1:0`, `${run.id}:2:0`, `${run.id}:2:1`],
  )
})

t.test('{{trigger.path}} reads the JSON-parsed trigger payload in any step', async (t) => {
  const { run, tools } = await runOne(
    t,
    [
      step(1, { calls: [call('echo', { a: 1 })] }),
      step(2, {
        calls: [
          call('echo', {
            slot: '{{trigger.slot}}',
            amount: '{{trigger.amount}}',
            note: 'slot {{trigger.slot}}',
          }),
        ],
      }),
    ],
    '{"slot":"B2","amount":3}',
  )
  t.equal(run.state, 'completed')
  t.same(tools.calls[1]?.args, { slot: 'B2', amount: 3, note: 'slot B2' })
  const text = await runOne(t, [step(1, { calls: [call('echo', { v: '{{trigger.slot}}' })] })], 'plain text')
  t.equal(text.run.state, 'failed')
  t.match(text.run.error, /\{\{trigger\.slot\}\}: no "slot" in the trigger payload/)
})

t.test('an unresolvable template fails the step; template text never reaches a tool', async (t) => {
  const { run, tools } = await runOne(t, [
    step(1, { calls: [call('echo', { a: 1 })] }),
    step(2, { calls: [call('echo', { b: '{{steps.1.missing}}' })] }),
  ])
  t.equal(run.state, 'failed')
  t.match(run.error, /step 2 failed: call 0 \(echo\): .*steps\.1\.missing/)
  t.equal(tools.calls.length, 1)
})

t.test('step 1 gets the trigger payload, JSON parsed when it parses, else text', async (t) => {
  const a = await runOne(
    t,
    [
      step(1, {
        input: { type: 'object', required: ['n'], properties: { n: { type: 'number' } } },
        calls: [call('echo')],
      }),
    ],
    '{"n": 3}',
  )
  t.equal(a.run.state, 'completed')
  t.same(a.run.steps['1']?.input, { n: 3 })
  const b = await runOne(t, [step(1, { calls: [call('echo')] })], 'plain words')
  t.same(b.run.steps['1']?.input, 'plain words')
})

t.test('a failing input contract fails the run before the step runs', async (t) => {
  const { run, tools } = await runOne(
    t,
    [step(1, { input: { n: 'number' }, onFailure: { kind: 'retry', count: 3 }, calls: [call('echo')] })],
    { n: 'x' },
  )
  t.equal(run.state, 'failed')
  t.match(run.error, /step 1: input does not match its input contract: \/n must be number/)
  t.equal(tools.calls.length, 0)
})

t.test('a failing output contract goes through on_failure', async (t) => {
  const steps = [
    step(1, {
      calls: [call('echo', { n: 'text' })],
      output: { n: 'number' },
      onFailure: { kind: 'goto', step: 3 },
    }),
    step(2, { calls: [call('echo', { never: true })] }),
    step(3, { calls: [call('other', { recovered: true })] }),
  ]
  const { run, tools } = await runOne(t, steps)
  t.equal(run.state, 'completed')
  t.equal(run.steps['1']?.status, 'failed')
  t.match(run.steps['1']?.error, /output does not match its output contract: \/n must be number/)
  t.same(
    tools.calls.map((c) => c.tool),
    ['echo', 'other'],
  )
})

t.test('deny-tools and allow-tools are enforced with a clear reason', async (t) => {
  const denied = await runOne(t, [step(1, { denyTools: ['echo'], calls: [call('echo')] })])
  t.equal(denied.run.state, 'failed')
  t.match(denied.run.error, /call 0 \(echo\): tool "echo" is denied by deny-tools/)
  t.equal(denied.tools.calls.length, 0)
  const notAllowed = await runOne(t, [
    step(1, { allowTools: ['other'], calls: [call('other'), call('echo')] }),
  ])
  t.match(notAllowed.run.error, /call 1 \(echo\): tool "echo" is not in allow-tools \(other\)/)
  t.same(
    notAllowed.tools.calls.map((c) => c.tool),
    ['other'],
  )
})

t.test('unknown tools, bad arguments and throwing tools fail the step, not the engine', async (t) => {
  const unknown = await runOne(t, [step(1, { calls: [call('nosuch')] })])
  t.match(unknown.run.error, /no tool named "nosuch"/)
  const badArgs = await runOne(t, [step(1, { calls: [call('typed', { n: 'one' })] })])
  t.match(badArgs.run.error, /arguments for typed do not match its schema: \/n must be number/)
  t.equal(badArgs.tools.calls.length, 0)
  const thrown = await runOne(t, [step(1, { calls: [call('throws')] })])
  t.match(thrown.run.error, /throws threw: kaboom/)
})

t.test('retry:N retries up to N times, then fails the run', async (t) => {
  const ok = await runOne(
    t,
    [step(1, { onFailure: { kind: 'retry', count: 2 }, calls: [call('flaky', { x: 1 })] })],
    {},
    2,
  )
  t.equal(ok.run.state, 'completed')
  t.equal(ok.tools.calls.length, 3)
  const same = new Set(ok.tools.calls.map((c) => c.ctx.idempotencyKey))
  t.equal(same.size, 1, 'retries reuse the idempotency key')
  const no = await runOne(
    t,
    [step(1, { onFailure: { kind: 'retry', count: 2 }, calls: [call('flaky')] })],
    {},
    5,
  )
  t.equal(no.run.state, 'failed')
  t.match(no.run.error, /step 1 failed \(after 2 retries\): call 0 \(flaky\): tool flaky|flaky failure/)
  t.equal(no.tools.calls.length, 3)
})

t.test('fail (the default) fails the run; goto routes to the named step', async (t) => {
  const failed = await runOne(t, [step(1, { calls: [call('fail')] }), step(2, { calls: [call('echo')] })])
  t.equal(failed.run.state, 'failed')
  t.match(failed.run.error, /step 1 failed: call 0 \(fail\): it broke/)
  t.equal(failed.tools.calls.length, 1)
})

t.test('a step visited more than 256 times fails the run', async (t) => {
  const { run, tools } = await runOne(t, [step(1, { calls: [call('echo')], next: 1 })])
  t.equal(run.state, 'failed')
  t.match(run.error, /step 1 was visited more than 256 times/)
  t.equal(tools.calls.length, 256)
})

// sops/RUNTIME.md, "Routing": `when:` is read after its step has run and guards the step's routing; it
// never skips the step (step 5 runs either way, and only its next: depends on the guard).
t.test('switch, when, next and terminal route a real run', async (t) => {
  const steps = [
    step(1, {
      calls: [call('echo', { n: 7 })],
      switch: [
        { name: 'big', condition: '$.steps.1.n > 10', target: 4 },
        { name: 'small', condition: '$.steps.1.n > 5', target: 3 },
      ],
    }),
    step(2, { calls: [call('echo', { at: 2 })] }),
    step(3, { calls: [call('echo', { at: 3 })], next: 5 }),
    step(4, { calls: [call('echo', { at: 4 })] }),
    step(5, { when: '$.trigger.go == yes', next: 7, calls: [call('echo', { at: 5 })] }),
    step(6, { calls: [call('echo', { at: 6 })], terminal: true }),
    step(7, { calls: [call('echo', { at: 7 })] }),
  ]
  const a = await runOne(t, steps, { go: 'no' })
  t.same(
    a.tools.calls.map((c) => c.args),
    [{ n: 7 }, { at: 3 }, { at: 5 }, { at: 6 }],
    'when: false: step 5 ran, then the next step in order (6, terminal)',
  )
  t.equal(a.run.steps['5']?.status, 'completed')
  t.equal(a.run.state, 'completed')
  const b = await runOne(t, steps, { go: 'yes' })
  t.same(
    b.tools.calls.map((c) => c.args),
    [{ n: 7 }, { at: 3 }, { at: 5 }, { at: 7 }],
    'when: true: next: 7 as written',
  )
  t.equal(b.run.steps['6'], undefined, 'step 6 never entered')
})

t.test('the when: loop idiom counts a value down, reading the step own output', async (t) => {
  const { memoryTools } = await import('./helpers.ts')
  const steps = [
    step(1, { calls: [call('echo', { start: true })] }),
    step(2, { calls: [call('countdown')], when: '$.steps.2.left > 0', next: 2 }),
    step(3, { calls: [call('echo', { done: true })], terminal: true }),
  ]
  const { engine, tools } = await startEngine(t, [sop({ steps })], {
    tools: memoryTools({ countdownFrom: 4 }),
  })
  const d = await engine.trigger('test-sop', event())
  await engine.idle()
  const run = (await engine.getRun(d.runId!))!
  t.equal(run.state, 'completed')
  t.same(
    tools.calls.map((c) => c.tool),
    ['echo', 'countdown', 'countdown', 'countdown', 'countdown', 'echo'],
    'left 3, 2, 1 loop back; left 0 goes on to step 3',
  )
  t.equal(run.steps['2']?.visits, 4)
  t.same(run.steps['2']?.output, { left: 0 })
})

t.test('a when: loop that never turns false fails at the 256-visit cap', async (t) => {
  const steps = [
    step(1, { calls: [call('echo', { left: 1 })], when: '$.steps.1.left > 0', next: 1 }),
    step(2, { calls: [call('echo', { never: true })] }),
  ]
  const { run, tools } = await runOne(t, steps)
  t.equal(run.state, 'failed')
  t.match(run.error, /step 1 was visited more than 256 times/)
  t.equal(tools.calls.length, 256)
  t.notOk(
    tools.calls.some((c) => (c.args as { never?: boolean }).never),
    'step 2 never ran',
  )
})

t.test('depends_on: a step whose prerequisites did not complete is skipped with the reason', async (t) => {
  const steps = [
    step(1, { calls: [call('echo', { a: 1 })], next: 3 }),
    step(2, { calls: [call('echo', { b: 1 })] }),
    step(3, { dependsOn: [1, 2], calls: [call('echo', { c: 1 })] }),
    step(4, { dependsOn: [1], calls: [call('echo', { d: '{{steps.1.a}}' })] }),
  ]
  const { run, tools } = await runOne(t, steps)
  t.equal(run.state, 'completed')
  t.equal(run.steps['3']?.status, 'skipped')
  t.match(run.steps['3']?.reason, /depends_on: step 2 did not complete/)
  t.same(
    tools.calls.map((c) => c.args),
    [{ a: 1 }, { d: 1 }],
  )
})

t.test('a tool that breaks its result contract fails the step with a reason', async (t) => {
  const { createEngine } = await import('../../hub/engine/index.ts')
  const { tempDir } = await import('../helpers/tmp.ts')
  const { Type } = await import('typebox')
  const bad = (name: string, result: unknown) => ({
    name,
    description: '',
    schema: Type.Any(),
    run: async () => result as never,
  })
  const registry = new Map([
    ['nothing', bad('nothing', undefined)],
    ['silent', bad('silent', { ok: false })],
    ['empty', bad('empty', { ok: true })],
  ])
  const engine = await createEngine({
    sops: [
      sop({ name: 'a', steps: [step(1, { calls: [call('nothing')] })] }),
      sop({ name: 'b', steps: [step(1, { calls: [call('silent')] })] }),
      sop({ name: 'c', steps: [step(1, { calls: [call('empty')] })] }),
    ],
    tools: registry,
    dbPath: await tempDir(t),
  })
  t.teardown(() => engine.close())
  const ids = await Promise.all(['a', 'b', 'c'].map(async (n) => (await engine.trigger(n, event())).runId!))
  await engine.idle()
  const [a, b, c] = await Promise.all(ids.map((id) => engine.getRun(id)))
  t.match(a?.error, /nothing returned no \{ ok, output \} result/)
  t.match(b?.error, /silent failed without saying why/)
  t.equal(c?.state, 'completed')
  t.equal(c?.steps['1']?.output, null)
})

t.test('an unclosed {{ in a call fails the step at run time and never reaches the tool', async (t) => {
  // The validator refuses such a SOP (broken corpus: template-unclosed); this SOP is built
  // directly, as a caller that skipped validation would, to show the engine holds the line too.
  const steps = [
    step(1, { calls: [call('echo', { ms: 5 })] }),
    step(2, { calls: [call('echo', { ms: '{{steps.1.ms' })] }),
  ]
  const { run, tools } = await runOne(t, steps)
  t.equal(run.state, 'failed')
  t.match(run.error, /step 2 failed: call 0 \(echo\): \{\{steps\.1\.ms: unclosed template/)
  t.same(
    tools.calls.map((c) => c.args),
    [{ ms: 5 }],
    'only step 1 reached the tool',
  )
})
