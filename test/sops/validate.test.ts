// Validator rules that warn rather than refuse (the broken corpus holds the errors), and the
// examples' promise: they validate with no warning at all.
import t from 'tap'
import { mkdir, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { loadSop, loadSops } from '../../sops/load.ts'
import { tempDir } from '../helpers/tmp.ts'

const examples = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'sops', 'examples')

async function load(t: Parameters<typeof tempDir>[0], md: string) {
  const dir = join(await tempDir(t), 'case')
  await mkdir(dir)
  await writeFile(join(dir, 'SOP.toml'), '[sop]\nname = "case"\ndescription = "d"\nexecution_mode = "auto"\n')
  await writeFile(join(dir, 'SOP.md'), md)
  return loadSop(dir)
}

t.test('the examples validate with no warnings', async (t) => {
  const r = await loadSops(examples)
  t.same(r.diagnostics, [])
  t.same(
    r.sops.map((s) => s.name),
    ['nightly-report', 'temperature-alarm', 'vending-dispense'],
  )
})

t.test('when: on a step with neither next: nor switch: changes nothing: a warning at its line', async (t) => {
  const r = await load(
    t,
    `## Steps

1. **Read**
   - call: {"tool":"wait","args":{"ms":1}}
   - when: $.steps.1.ms > 0
2. **Loop**
   - call: {"tool":"wait","args":{"ms":1}}
   - when: $.steps.2.ms > 0
   - next: 2
3. **Branch**
   - call: {"tool":"wait","args":{"ms":1}}
   - when: $.steps.3.ms > 0
   - switch: a>>1
4. **End**
   - call: {"tool":"wait","args":{"ms":1}}
   - when: $.steps.4.ms > 0
   - terminal: true
`,
  )
  t.ok(r.sop, 'warnings do not stop the SOP loading')
  t.same(
    r.diagnostics.map((d) => [d.line, d.severity, d.message.split(':').slice(0, 2).join(':')]),
    [
      [5, 'warning', 'when: changes nothing on step 1'],
      [16, 'warning', 'when: changes nothing on step 4'],
    ],
  )
})
