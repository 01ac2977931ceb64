// A step's calls fail with a code beside the message (errors/README.md, "Results"): the engine's
// own refusals name theirs, a tool's code is passed on, and a tool that gives none breaks its
// contract. The run record keeps only the message (test/engine/data.test.ts reads those).
import t from 'tap'
import { Type } from 'typebox'
import { type CallScope, callTool, runPlannedCalls } from '../../hub/engine/calls.ts'
import type { Step } from '../../sops/types.ts'
import type { ToolRegistry } from '../../tools/types.ts'
import { call, memoryTools, step } from './helpers.ts'

const scope = (s: Step): CallScope => ({
  runId: 'r1',
  sop: 'test-sop',
  step: s,
  steps: {},
  trigger: {},
  signal: new AbortController().signal,
})

t.test('callTool: each refusal has its code, a tool failure keeps the code the tool gave', async (t) => {
  const { registry } = memoryTools()
  const plain = step(1)
  t.same(await callTool(registry, scope(step(1, { denyTools: ['echo'] })), 0, 'echo', {}), {
    ok: false,
    code: 'FORBIDDEN',
    error: 'tool "echo" is denied by deny-tools',
  })
  t.same(await callTool(registry, scope(plain), 0, 'nope', {}), {
    ok: false,
    code: 'NOT_FOUND',
    error: 'no tool named "nope"',
  })
  t.match(await callTool(registry, scope(plain), 0, 'typed', { n: 'x' }), {
    ok: false,
    code: 'BAD_INPUT',
    error: /^arguments for typed do not match its schema/,
  })
  t.same(await callTool(registry, scope(plain), 0, 'throws', {}), {
    ok: false,
    code: 'INTERNAL',
    error: 'throws threw: kaboom',
  })
  t.same(await callTool(registry, scope(plain), 0, 'fail', {}), {
    ok: false,
    code: 'UPSTREAM_FAILED',
    error: 'it broke',
  })
})

t.test('callTool: a failure without a known code is a broken contract', async (t) => {
  const tool = (result: unknown) => ({
    name: 'odd',
    description: '',
    schema: Type.Any(),
    run: async () => result as never,
  })
  const at = (result: unknown): ToolRegistry => new Map([['odd', tool(result)]])
  t.same(await callTool(at({ ok: false, error: 'no code' }), scope(step(1)), 0, 'odd', {}), {
    ok: false,
    code: 'INTERNAL',
    error: 'no code',
  })
  t.same(await callTool(at({ ok: false, code: 'NOPE', error: 'made up' }), scope(step(1)), 0, 'odd', {}), {
    ok: false,
    code: 'INTERNAL',
    error: 'made up',
  })
  t.same(await callTool(at({ ok: false, code: 'TIMEOUT' }), scope(step(1)), 0, 'odd', {}), {
    ok: false,
    code: 'TIMEOUT',
    error: 'odd failed without saying why',
  })
})

t.test('runPlannedCalls: the failing call is named in front of the message, its code kept', async (t) => {
  const { registry } = memoryTools()
  const s = step(1, { calls: [call('echo', { a: 1 }), call('fail')] })
  t.same(await runPlannedCalls(registry, scope(s)), {
    ok: false,
    code: 'UPSTREAM_FAILED',
    error: 'call 1 (fail): it broke',
    calls: [{ a: 1 }],
  })
  const missing = step(1, { calls: [call('echo', { a: '{{steps.7.x}}' })] })
  t.same(await runPlannedCalls(registry, scope(missing)), {
    ok: false,
    code: 'BAD_INPUT',
    error: 'call 0 (echo): {{steps.7.x}}: step 7 has no output (it has not completed in this run)',
    calls: [],
  })
})
