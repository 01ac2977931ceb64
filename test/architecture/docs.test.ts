// The docs a newcomer meets: a short root README that points into one README per folder, and
// no link to a file the repository does not carry (a reader of a fresh clone must be able to
// follow every one).
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join, normalize } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import {
  anchorOf,
  citationsIn,
  type Headings,
  headingsOf,
  namesHeading,
  reader,
  repoFiles,
} from './doc-refs.ts'

const root = join(dirname(fileURLToPath(import.meta.url)), '../..')
const FOLDERS = ['sops', 'hub', 'bridge', 'boards', 'chain', 'market', 'bench']
/** The reference documents beside the folder READMEs. */
const REFERENCES = ['sops/FORMAT.md', 'sops/RUNTIME.md', 'market/API.md', 'hub/DESIGN.md']
const docs = ['README.md', ...FOLDERS.map((f) => `${f}/README.md`), ...REFERENCES]

t.test('the root README stays short: at most 250 lines', async (t) => {
  const lines = readFileSync(join(root, 'README.md'), 'utf8').split('\n').length
  t.ok(lines <= 250, `README.md has ${lines} lines`)
})

t.test('each folder has its README, and the root README links to each', async (t) => {
  for (const r of REFERENCES) t.ok(existsSync(join(root, r)), `${r} exists`)
  const top = readFileSync(join(root, 'README.md'), 'utf8')
  for (const f of FOLDERS) {
    t.ok(existsSync(join(root, f, 'README.md')), `${f}/README.md exists`)
    t.ok(top.includes(`(${f}/README.md`), `README.md links to ${f}/README.md`)
  }
})

t.test('every relative link in the READMEs points at a file in the repository', async (t) => {
  // [text](target) with a relative target; anchors and web addresses are not files.
  const LINK = /\]\(([^)\s]+)\)/g
  const broken: string[] = []
  let seen = 0
  for (const doc of docs) {
    if (!existsSync(join(root, doc))) continue
    // Code blocks and code spans hold shell and regexes, not links.
    const text = readFileSync(join(root, doc), 'utf8')
      .replace(/^```[\s\S]*?^```/gm, '')
      .replace(/`[^`\n]*`/g, '')
    for (const m of text.matchAll(LINK)) {
      const target = (m[1] as string).split('#')[0] as string
      if (target === '' || /^[a-z]+:/i.test(target)) continue
      seen++
      const path = normalize(join(dirname(doc), decodeURIComponent(target)))
      if (path.startsWith('..') || !existsSync(join(root, path))) broken.push(`${doc} → ${m[1]}`)
    }
  }
  t.ok(seen > 10, `${seen} relative links checked`)
  t.same(broken, [])
})

// Comments and docs cite documents a clone carries, by path and heading (doc-refs.ts reads
// both forms), never a document outside the repository or an issue number.
const files = repoFiles(root)
const read = reader(root)
const self = 'test/architecture/docs.test.ts'
// This test and its reader hold example citations and the patterns it looks for.
const examples = new Set([self, 'test/architecture/doc-refs.ts'])

t.test('no reference to a document outside the repository, and no issue number', async (t) => {
  // Spelled in pieces so that this file does not match itself.
  const outside = [
    new RegExp(['SOP', 'NOTES'].join('-')),
    new RegExp(['marketplace', 'api'].join('-')),
    new RegExp(`\\b${'DESIGN'}\\b(?!\\.md)`),
    new RegExp(`\\b${'issue'} #?[0-9]`, 'i'),
  ]
  const found: string[] = []
  for (const f of files) {
    if (examples.has(f)) continue
    read(f)
      .split('\n')
      .forEach((line, i) => {
        for (const re of outside) if (re.test(line)) found.push(`${f}:${i + 1}: ${line.trim().slice(0, 120)}`)
      })
  }
  t.ok(files.length > 500, `${files.length} .ts and .md files read`)
  t.same(found, [])
})

t.test('every cited document exists and has the cited heading or anchor', async (t) => {
  const headings = new Map<string, Headings>()
  const headingsOfFile = (rel: string): Headings => {
    let h = headings.get(rel)
    if (!h) {
      h = headingsOf(read(rel))
      headings.set(rel, h)
    }
    return h
  }
  const broken: string[] = []
  let checked = 0
  for (const f of files) {
    if (examples.has(f)) continue
    for (const c of citationsIn(f, read(f))) {
      // A path from the repository root, or from the citing file's folder (Markdown links).
      const candidates = [normalize(c.path), normalize(join(dirname(f), c.path))].filter(
        (p) => !p.startsWith('..') && existsSync(join(root, p)),
      )
      const at = `${f}:${c.line}`
      if (candidates.length === 0) {
        broken.push(`${at}: ${c.path} does not exist`)
        continue
      }
      checked++
      const ok = candidates.some((p) => {
        const h = headingsOfFile(p)
        if (c.anchor !== undefined) return h.anchors.has(c.anchor.toLowerCase())
        return c.heading === undefined || namesHeading(h.texts, c.heading)
      })
      if (!ok)
        broken.push(
          `${at}: ${c.path} has no ${c.anchor !== undefined ? `anchor #${c.anchor}` : `heading "${c.heading}"`}`,
        )
    }
  }
  t.ok(checked > 100, `${checked} citations checked`)
  t.same(broken, [])
})

t.test('the reader of citations', async (t) => {
  t.equal(anchorOf('Board firmware: `svc board flash`'), 'board-firmware-svc-board-flash')
  t.equal(anchorOf('The `chain_attest` tool'), 'the-chain_attest-tool')
  t.equal(anchorOf('Running the hub without tsx (production)'), 'running-the-hub-without-tsx-production')
  t.ok(namesHeading(['Preflight (chain/preflight.ts)'], 'Preflight'))
  t.ok(namesHeading(['How requestHash is derived, and who requests'], 'How `requestHash` is derived'))
  t.notOk(namesHeading(['Retention'], 'Retention rules'))
  t.notOk(namesHeading(['Admissions'], 'Admission'))
  const ts =
    '// a rule (sops/RUNTIME.md,\n// "Admission policies") and hub/DESIGN.md#the-event-path\nconst x = 1'
  t.same(
    citationsIn('x.ts', ts).map((c) => [c.path, c.heading ?? c.anchor, c.line]),
    [
      ['sops/RUNTIME.md', 'Admission policies', 1],
      ['hub/DESIGN.md', 'the-event-path', 2],
    ],
  )
  const md = 'See [the rule](RUNTIME.md#routing) and [here](#top).\n\n```\n# not a heading\n```\n## Top\n'
  t.same(headingsOf(md).texts, ['Top'])
  t.same(
    citationsIn('sops/x.md', md).map((c) => [c.path, c.anchor]),
    [
      ['RUNTIME.md', 'routing'],
      ['sops/x.md', 'top'],
    ],
  )
})
