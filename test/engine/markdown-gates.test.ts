// Gates written in SOP.md reach the run, whatever the bullets' indentation (sops/FORMAT.md,
// "Reading the steps"). The SOP goes through the real loader, then a real engine: the run must wait for the
// approval its step asks for, with no call made past the gate.
import t, { type Test } from 'tap'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { loadSop } from '../../sops/load.ts'
import { tempDir } from '../helpers/tmp.ts'
import { startEngine } from './engine-helpers.ts'
import { event } from './helpers.ts'

async function fromMarkdown(t: Test, md: string) {
  const dir = join(await tempDir(t), 'gated')
  await mkdir(dir)
  await writeFile(
    join(dir, 'SOP.toml'),
    '[sop]\nname = "gated"\ndescription = "a gate under odd indentation"\nexecution_mode = "auto"\n',
  )
  await writeFile(join(dir, 'SOP.md'), md)
  const r = await loadSop(dir)
  t.same(
    r.diagnostics.filter((d) => d.severity === 'error'),
    [],
    'loads without errors',
  )
  return r.sop!
}

t.test('1. with 2-space bullets: the run waits before step 1 and calls nothing', async (t) => {
  const sop = await fromMarkdown(
    t,
    `## Steps

1. **Dispense** — open the slot
  - requires_confirmation: true
  - prompt: Open slot A1?
  - call: {"tool":"echo","args":{"open":"A1"}}
2. **Attest**
  - call: {"tool":"echo","args":{"attest":true}}
  - terminal: true
3. **Never** — terminal above ends the run first
  - call: {"tool":"echo","args":{"never":true}}
`,
  )
  const { engine, tools } = await startEngine(t, [sop])
  const d = await engine.trigger('gated', event())
  await engine.idle()
  t.equal(tools.calls.length, 0, 'no call before the approval')
  t.match(engine.pending(), [
    {
      state: 'waiting_approval',
      gate: { step: 1, prompt: 'Open slot A1?', operatorOnly: true, reason: /requires_confirmation/ },
    },
  ])
  t.match(await engine.approve(d.runId!, { via: 'agent' }), { ok: false }, 'an agent cannot pass it')
  t.equal(tools.calls.length, 0)
  t.equal((await engine.approve(d.runId!, { by: 'ops' })).ok, true)
  await engine.idle()
  t.same(
    tools.calls.map((c) => c.args),
    [{ open: 'A1' }, { attest: true }],
    'the call and terminal: written under the odd indentation both took effect',
  )
  t.equal((await engine.getRun(d.runId!))?.state, 'completed')
})

t.test('10. with 3-space bullets: the run waits before step 10 after nine calls', async (t) => {
  const nine = Array.from(
    { length: 9 },
    (_, i) => `${i + 1}. **Step ${i + 1}**\n   - call: {"tool":"echo","args":{"n":${i + 1}}}`,
  )
  const sop = await fromMarkdown(
    t,
    `## Steps

${nine.join('\n')}
10. **Tenth** — needs a person
   - requires_confirmation: true
   - call: {"tool":"echo","args":{"n":10}}
   - terminal: true
11. **Eleventh**
   - call: {"tool":"echo","args":{"n":11}}
`,
  )
  const { engine, tools } = await startEngine(t, [sop])
  const d = await engine.trigger('gated', event())
  await engine.idle()
  t.equal(tools.calls.length, 9, 'steps 1..9 ran')
  t.match(engine.pending(), [
    { state: 'waiting_approval', gate: { step: 10, reason: /requires_confirmation/ } },
  ])
  await engine.approve(d.runId!)
  await engine.idle()
  t.same(
    tools.calls.map((c) => (c.args as { n: number }).n),
    [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
    'step 10 ran after the approval and ended the run (terminal)',
  )
})

t.test('tab-indented bullets: the gate holds', async (t) => {
  const sop = await fromMarkdown(
    t,
    '## Steps\n\n1. **Check**\n\t- mode: step_by_step\n\t- call: {"tool":"echo","args":{}}\n',
  )
  const { engine, tools } = await startEngine(t, [sop])
  await engine.trigger('gated', event())
  await engine.idle()
  t.equal(tools.calls.length, 0)
  t.match(engine.pending(), [{ gate: { step: 1, reason: /step_by_step/ } }])
})
