// Engine lifecycle: kept triggers waiting out a cooldown, reloading SOPs, bad events, closing
// with a tool still busy, the injected log.
import t from 'tap'
import type { TriggerEvent } from '../../sops/engine-api.ts'
import { waitFor } from '../helpers/wait.ts'
import { call, event, sop, step } from './helpers.ts'
import { startEngine } from './engine-helpers.ts'

t.test('a deferred trigger waits out the cooldown instead of being dropped', async (t) => {
  const s = sop({ cooldownSecs: 1, steps: [step(1, { calls: [call('block')] })] })
  const { engine, tools } = await startEngine(t, [s])
  const a = await engine.trigger('test-sop', event({ i: 1 }))
  const b = await engine.trigger('test-sop', event({ i: 2 }))
  t.same([a.outcome, b.outcome], ['started', 'deferred'])
  await waitFor(() => tools.blockedCount() === 1, 'run a blocked')
  tools.release()
  await waitFor(async () => (await engine.getRun(a.runId!))?.state === 'completed', 'run a done')
  t.equal(engine.keptTriggers().length, 1, 'still kept during the cooldown')
  const c = await engine.trigger('test-sop', event({ i: 3 }))
  t.equal(c.outcome, 'cooldown', 'a fresh trigger inside the cooldown is dropped')
  await waitFor(() => tools.blockedCount() === 1, 'the deferred run to start after the cooldown')
  t.equal(engine.keptTriggers().length, 0)
  tools.release()
  await engine.idle()
  const runs = await engine.listRuns({ state: 'completed' })
  t.equal(runs.length, 2)
})

t.test('setSops: runs in flight keep their SOP; new triggers see the new set', async (t) => {
  const v1 = sop({
    steps: [step(1, { calls: [call('block', { v: 1 })] }), step(2, { calls: [call('echo', { v: 1 })] })],
  })
  const v2 = sop({ steps: [step(1, { calls: [call('echo', { v: 2 })] })] })
  const { engine, tools } = await startEngine(t, [v1])
  const a = await engine.trigger('test-sop', event())
  await waitFor(() => tools.blockedCount() === 1, 'run a blocked')
  engine.setSops([v2, sop({ name: 'other', steps: [step(1, { calls: [call('echo')] })] })])
  tools.release()
  await engine.idle()
  t.same(
    tools.calls.map((c) => c.args),
    [{ v: 1 }, { v: 1 }],
    'run a finished on v1',
  )
  t.equal((await engine.getRun(a.runId!))?.state, 'completed')
  await engine.trigger('test-sop', event())
  await engine.idle()
  t.same(tools.calls.at(-1)?.args, { v: 2 })
  engine.setSops([])
  t.match(await engine.trigger('test-sop', event()), {
    outcome: 'dropped',
    reason: /no SOP named "test-sop"/,
  })
})

t.test('malformed events are dropped with the reason, never thrown', async (t) => {
  const { engine } = await startEngine(t, [sop({ steps: [step(1, { calls: [call('echo')] })] })])
  const bad: [unknown, RegExp][] = [
    [null, /not an object/],
    [{ type: 'manual', source: 's', at: 1 }, /payload is missing/],
    [{ type: 'manual', payload: 1, at: 1 }, /source is missing/],
    [{ source: 's', payload: 1, at: 1 }, /type is missing/],
  ]
  for (const [ev, why] of bad)
    t.match(await engine.trigger('test-sop', ev as TriggerEvent), { outcome: 'dropped', reason: why })
  t.same(await engine.listRuns(), [])
})

t.test('close() aborts tools that listen and does not wait for ever on one that does not', async (t) => {
  const { engine, tools, close } = await startEngine(t, [
    sop({ steps: [step(1, { calls: [call('block')] })] }),
  ])
  await engine.trigger('test-sop', event())
  await waitFor(() => tools.blockedCount() === 1, 'blocked')
  await close()
  t.match(await engine.trigger('test-sop', event()), { outcome: 'dropped', reason: 'the engine is closed' })
})

t.test('the injected log hears about state changes', async (t) => {
  const lines: string[] = []
  const log = {
    info: (_o: object | string, m?: string) => void lines.push(`info ${m}`),
    warn: (_o: object | string, m?: string) => void lines.push(`warn ${m}`),
    error: (_o: object | string, m?: string) => void lines.push(`error ${m}`),
  }
  const { engine } = await startEngine(
    t,
    [sop({ steps: [step(1, { title: 'only', calls: [call('fail')] })] })],
    { log },
  )
  await engine.trigger('test-sop', event())
  await engine.idle()
  t.match(lines, [/warn attempt 1 failed: call 0 \(fail\): it broke/, /error failed: step 1 failed/])
})

t.test('a finished run reads as finished while its final record waits for the next sync', async (t) => {
  const s = sop({ steps: [step(1, { calls: [call('block')] })] })
  const { engine, tools } = await startEngine(t, [s])
  const d = await engine.trigger('test-sop', event())
  await waitFor(() => tools.blockedCount() === 1, 'the step is running')
  tools.release()
  // The step's call returns; the final record is handed to the group commit, which holds it up
  // to DEFER_MS for another write to share the sync. Read in that window:
  await new Promise((r) => setImmediate(r))
  t.equal((await engine.getRun(d.runId!))?.state, 'completed', 'getRun')
  const page = await engine.queryRuns({ state: 'completed' })
  t.same(
    page.runs.map((r) => r.id),
    [d.runId],
    'and the run history, by its final state',
  )
  await engine.idle()
  t.equal((await engine.getRun(d.runId!))?.state, 'completed', 'and from the store once written')
})

t.test('run ids are RFC 9562 version 7 UUIDs and sort in the order the runs were made', async (t) => {
  // LevelDB keys by run id then land after the ones before them (hub/engine/README.md,
  // "The write budget"); ids that did not sort would put every run among the others.
  const { engine } = await startEngine(t, [sop({ steps: [step(1, { calls: [call('echo')] })] })])
  const ids: string[] = []
  for (let i = 0; i < 100; i++) {
    ids.push((await engine.trigger('test-sop', event({ i }))).runId!)
    await engine.idle()
  }
  for (const id of ids) t.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
  t.same([...ids].sort(), ids, 'made in order, sorted in order')
  t.equal(new Set(ids).size, ids.length, 'no id repeats')
})
