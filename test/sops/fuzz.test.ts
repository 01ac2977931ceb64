// Nothing a SOP author writes may crash the loader, and every diagnostic points at a real line.
import t from 'tap'
import fc from 'fast-check'
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseSop } from '../../sops/parse.ts'

const ex = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'sops', 'examples', 'vending-dispense')
const toml = readFileSync(join(ex, 'SOP.toml'), 'utf8')
const md = readFileSync(join(ex, 'SOP.md'), 'utf8')

function check(tomlText: string, mdText: string): boolean {
  const r = parseSop({ dir: 'd', tomlPath: 'SOP.toml', tomlText, mdPath: 'SOP.md', mdText })
  const lines = { 'SOP.toml': tomlText.split('\n').length, 'SOP.md': mdText.split('\n').length } as Record<
    string,
    number
  >
  return r.diagnostics.every(
    (d) => Number.isInteger(d.line) && d.line >= 1 && d.line <= (lines[d.file] ?? 0) && d.message.length > 0,
  )
}

t.test('mutated examples: delete, duplicate or garble any line', async (t) => {
  const mutate = (text: string) =>
    fc
      .tuple(fc.nat(), fc.constantFrom('delete', 'dup', 'garble', 'insert'), fc.string())
      .map(([i, op, s]) => {
        const lines = text.split('\n')
        const at = i % lines.length
        if (op === 'delete') lines.splice(at, 1)
        else if (op === 'dup') lines.splice(at, 0, lines[at] ?? '')
        else if (op === 'garble') lines[at] = (lines[at] ?? '').slice(0, s.length % 20) + s
        else lines.splice(at, 0, s)
        return lines.join('\n')
      })
  fc.assert(
    fc.property(mutate(toml), mutate(md), (a, b) => check(a, b)),
    { numRuns: 300 },
  )
  t.pass('never threw; every diagnostic located inside its file')
})

t.test('arbitrary text in either file', async (t) => {
  fc.assert(
    fc.property(fc.string({ maxLength: 400 }), fc.string({ maxLength: 400 }), (a, b) => check(a, b)),
    { numRuns: 300 },
  )
  fc.assert(
    fc.property(
      fc.array(
        fc.oneof(
          fc.constantFrom(
            '   - switch: ',
            '   - call: ',
            '   - depends_on: ',
            '1. **x**',
            '## Steps',
            '   - when: $.',
          ),
          fc.string({ maxLength: 30 }),
        ),
        { maxLength: 12 },
      ),
      (parts) => check(toml, md + '\n' + parts.join('\n')),
    ),
    { numRuns: 300 },
  )
  t.pass('never threw')
})
