// The agent tools sop_execute, sop_status, sop_approve, run through a real
// engine — including from a SOP step, the way an agent's run would call them.
import t from 'tap'
import type { HubEngine } from '../../sops/hub-engine.ts'
import type { ToolContext } from '../../tools/types.ts'
import { createSopApproveTool } from '../../tools/sop_approve.ts'
import { createSopExecuteTool } from '../../tools/sop_execute.ts'
import { createSopStatusTool } from '../../tools/sop_status.ts'
import { call, event, memoryTools, sop, step } from './helpers.ts'
import { startEngine } from './engine-helpers.ts'

const ctx: ToolContext = {
  runId: 'agent-run',
  sop: 'agent',
  step: 1,
  call: 0,
  idempotencyKey: 'agent-run:1:0',
  signal: new AbortController().signal,
}

async function world(t: Parameters<typeof startEngine>[0]) {
  let engine: HubEngine | undefined
  const get = () => engine
  const base = memoryTools()
  const tools = new Map(base.registry)
  for (const tool of [createSopExecuteTool(get), createSopStatusTool(get), createSopApproveTool(get)])
    tools.set(tool.name, tool)
  const sops = [
    sop({
      name: 'supervised',
      executionMode: 'supervised',
      steps: [step(1, { calls: [call('echo', { s: 1 })] })],
    }),
    sop({
      name: 'confirm',
      executionMode: 'auto',
      steps: [step(1, { requiresConfirmation: true, calls: [call('echo', { c: 1 })] })],
    }),
    sop({
      name: 'caller',
      executionMode: 'auto',
      steps: [step(1, { calls: [call('sop_execute', { sop: 'supervised', payload: { from: 'caller' } })] })],
    }),
  ]
  const started = await startEngine(t, sops, { tools: { ...base, registry: tools } })
  engine = started.engine
  return {
    engine: started.engine,
    exec: tools.get('sop_execute')!,
    status: tools.get('sop_status')!,
    approve: tools.get('sop_approve')!,
    base,
  }
}

t.test('sop_execute starts a manual run and reports the admission decision', async (t) => {
  const w = await world(t)
  const r = await w.exec.run({ sop: 'supervised', payload: { x: 1 } }, ctx)
  t.match(r, { ok: true, output: { outcome: 'started', run_id: /.+/, reason: /slot free/ } })
  const id = (r as unknown as { output: { run_id: string } }).output.run_id
  await w.engine.idle()
  const run = await w.engine.getRun(id)
  t.match(run?.trigger, { type: 'manual', payload: { x: 1 }, source: /sop_execute from run agent-run/ })
  t.match(await w.exec.run({ sop: 'nope' }, ctx), {
    ok: false,
    code: 'SOP_NOT_LOADED',
    error: 'sop_execute: no SOP named "nope" is loaded',
  })
})

t.test('a SOP step can start another SOP through sop_execute', async (t) => {
  const w = await world(t)
  const d = await w.engine.trigger('caller', event())
  await w.engine.idle()
  const out = (await w.engine.getRun(d.runId!))?.steps['1']?.output as { run_id: string }
  t.equal((await w.engine.getRun(out.run_id))?.state, 'waiting_approval')
})

t.test("sop_status: one run, a SOP's runs, unknown ids", async (t) => {
  const w = await world(t)
  const d = await w.engine.trigger('supervised', event())
  await w.engine.idle()
  t.match(await w.status.run({ run_id: d.runId! }, ctx), {
    ok: true,
    output: { run: { id: d.runId, state: 'waiting_approval', gate: { step: 1 } } },
  })
  t.match(await w.status.run({ sop: 'supervised' }, ctx), { ok: true, output: { runs: [{ id: d.runId }] } })
  t.match(await w.status.run({}, ctx), { ok: true, output: { runs: [{ id: d.runId }] } })
  t.match(await w.status.run({ run_id: 'nope' }, ctx), {
    ok: false,
    code: 'RUN_NOT_FOUND',
    error: /no run with id "nope"/,
  })
})

t.test(
  'sop_approve passes a mode gate, but never an operator-only gate (the request is recorded)',
  async (t) => {
    const w = await world(t)
    const sup = await w.engine.trigger('supervised', event())
    const conf = await w.engine.trigger('confirm', event())
    await w.engine.idle()
    t.match(await w.approve.run({ run_id: sup.runId!, note: 'user said yes in chat' }, ctx), {
      ok: true,
      output: { state: 'running' },
    })
    await w.engine.idle()
    t.equal((await w.engine.getRun(sup.runId!))?.state, 'completed')

    const refused = await w.approve.run({ run_id: conf.runId! }, ctx)
    t.match(refused, {
      ok: false,
      code: 'NEEDS_OPERATOR',
      error: /waits at step 1 for an operator \(requires_confirmation.*\); the request is recorded/,
    })
    await w.engine.idle()
    const run = await w.engine.getRun(conf.runId!)
    t.equal(run?.state, 'waiting_approval', 'still waiting')
    t.match(run?.gate?.requests, [{ by: 'agent (run agent-run)' }])
    t.same(
      w.base.calls.filter((c) => (c.args as { c?: number }).c === 1),
      [],
      'the confirmed step did not run',
    )
    t.equal((await w.engine.approve(conf.runId!, { by: 'ops' })).ok, true, 'the operator can')
    await w.engine.idle()
    t.equal((await w.engine.getRun(conf.runId!))?.state, 'completed')
  },
)

t.test('the tools refuse cleanly when the engine is not up', async (t) => {
  const none = () => undefined
  t.match(await createSopExecuteTool(none).run({ sop: 'x' }, ctx), {
    ok: false,
    code: 'UNAVAILABLE',
    error: /not running/,
  })
  t.match(await createSopStatusTool(none).run({}, ctx), {
    ok: false,
    code: 'UNAVAILABLE',
    error: /not running/,
  })
  t.match(await createSopApproveTool(none).run({ run_id: 'x' }, ctx), {
    ok: false,
    code: 'UNAVAILABLE',
    error: /not running/,
  })
})
