// The broken corpus: each test/sops/broken/<case>/ holds a SOP (or a folder of SOPs) with a
// mistake and expected.txt listing every error as `file:line: message-prefix`. The validator must
// report exactly those errors (same files and lines, nothing more) and refuse to load the SOP.
import t from 'tap'
import { readdirSync, readFileSync, existsSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { loadSop, loadSops } from '../../sops/load.ts'

const root = join(dirname(fileURLToPath(import.meta.url)), 'broken')
const cases = readdirSync(root)
  .filter((n) => existsSync(join(root, n, 'expected.txt')))
  .sort()

t.ok(cases.length >= 25, `at least 25 broken cases (found ${cases.length})`)

for (const name of cases) {
  t.test(name, async (t) => {
    const dir = join(root, name)
    const expected = readFileSync(join(dir, 'expected.txt'), 'utf8')
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => {
        const m = /^([^:]+):(\d+): (.*)$/.exec(l)
        if (!m) throw new Error(`bad expected line in ${name}: ${l}`)
        return { file: m[1] as string, line: Number(m[2]), message: m[3] as string }
      })
    const single = existsSync(join(dir, 'SOP.toml')) || existsSync(join(dir, 'SOP.md'))
    const result = single ? await loadSop(dir) : await loadSops(dir)
    if (single) t.equal((result as { sop?: unknown }).sop, undefined, 'a SOP with errors is not loaded')
    else t.same((result as { sops: unknown[] }).sops, [], 'no SOP with a duplicate name is loaded')
    const errors = result.diagnostics
      .filter((d) => d.severity === 'error')
      .map((d) => ({ file: relative(dir, d.file), line: d.line, message: d.message }))
    for (const e of expected) {
      const hit = errors.find(
        (a) => a.file === e.file && a.line === e.line && a.message.startsWith(e.message),
      )
      t.ok(hit, `${e.file}:${e.line}: ${e.message}`, { found: errors })
    }
    t.equal(errors.length, expected.length, 'no other errors', { found: errors })
  })
}
