import t from 'tap'
import { mkdir, writeFile, symlink } from 'node:fs/promises'
import { join } from 'node:path'
import { loadSop, loadSops } from '../../sops/load.ts'
import { tempDir } from '../helpers/tmp.ts'

const TOML = '[sop]\nname = "crlf"\ndescription = "windows line endings"\nexecution_mode = "deterministic"\n'
const MD =
  '# T\n\n## Steps\n\n1. **One**\n   - call: {"tool":"wait","args":{"ms":1}}\n2. **Two**\n   - next: 7\n'

t.test('CRLF line endings and a BOM keep exact line numbers', async (t) => {
  const dir = await tempDir(t)
  await writeFile(join(dir, 'SOP.toml'), '\ufeff' + TOML.replace(/\n/g, '\r\n'))
  await writeFile(join(dir, 'SOP.md'), '\ufeff' + MD.replace(/\n/g, '\r\n'))
  const r = await loadSop(dir)
  t.equal(r.sop, undefined)
  t.same(
    r.diagnostics.map((d) => [d.file.endsWith('SOP.md') ? 'md' : 'toml', d.line, d.message.split(' (')[0]]),
    [
      ['md', 7, 'step 2 has no "call:" but runs deterministically'],
      ['md', 8, 'next: step 2 refers to step 7, which does not exist'],
    ],
  )
})

t.test('a valid SOP loads with its origin lines; files are only read', async (t) => {
  const dir = await tempDir(t)
  await writeFile(join(dir, 'SOP.toml'), TOML)
  await writeFile(
    join(dir, 'SOP.md'),
    MD.replace('   - next: 7\n', '   - call: {"tool":"wait","args":{"ms":"{{steps.1.ms}}"}}\n'),
  )
  const r = await loadSop(dir)
  t.same(r.diagnostics, [])
  t.equal(r.sop?.name, 'crlf')
  t.same(
    r.sop?.steps.map((s) => [s.number, s.title, s.origin.line, s.calls[0]?.origin.line]),
    [
      [1, 'One', 5, 6],
      [2, 'Two', 7, 8],
    ],
  )
  t.equal(r.sop?.executionMode, 'deterministic')
  t.equal(r.sop?.package, undefined)
})

t.test('sops dir: SOPs, packages, symlinked packages, stray folders, missing dir', async (t) => {
  const root = await tempDir(t)
  const mk = async (dir: string, name: string) => {
    await mkdir(dir, { recursive: true })
    await writeFile(join(dir, 'SOP.toml'), `[sop]\nname = "${name}"\ndescription = "d"\n`)
    await writeFile(join(dir, 'SOP.md'), '## Steps\n\n1. **Only**\n')
  }
  await mk(join(root, 'sops', 'plain'), 'plain')
  await mk(join(root, 'sops', 'pkg', 'inner'), 'inner')
  await mk(join(root, 'elsewhere', 'linked-sop'), 'linked')
  await symlink(join(root, 'elsewhere'), join(root, 'sops', 'linkpkg'))
  await mkdir(join(root, 'sops', 'empty-folder'))
  await mkdir(join(root, 'sops', '.git'))
  const r = await loadSops(join(root, 'sops'))
  t.same(r.sops.map((s) => [s.name, s.package ?? null]).sort(), [
    ['inner', 'pkg'],
    ['linked', 'linkpkg'],
    ['plain', null],
  ])
  t.same(
    r.diagnostics.map((d) => [d.file, d.severity, d.message.split(' (')[0]]),
    [[join(root, 'sops', 'empty-folder'), 'warning', 'neither a SOP']],
  )
  const none = await loadSops(join(root, 'does-not-exist'))
  t.same(none, { sops: [], diagnostics: [] })
})

t.test('a SOP dir with only SOP.md is an error naming the missing file', async (t) => {
  const root = await tempDir(t)
  const dir = join(root, 'half')
  await mkdir(dir)
  await writeFile(join(dir, 'SOP.md'), MD)
  const r = await loadSops(root)
  t.same(r.sops, [])
  t.same(
    r.diagnostics.map((d) => [d.file, d.line, d.message]),
    [[join(dir, 'SOP.toml'), 1, 'SOP.toml: file is missing']],
  )
})
