// The docs a newcomer meets: a short root README that points into one README per folder, and
// no link to a file the repository does not carry (a reader of a fresh clone must be able to
// follow every one).
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join, normalize } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'

const root = join(dirname(fileURLToPath(import.meta.url)), '../..')
const FOLDERS = ['sops', 'hub', 'bridge', 'boards', 'chain', 'market', 'bench']
const docs = ['README.md', ...FOLDERS.map((f) => `${f}/README.md`)]

t.test('the root README stays short: at most 250 lines', async (t) => {
  const lines = readFileSync(join(root, 'README.md'), 'utf8').split('\n').length
  t.ok(lines <= 250, `README.md has ${lines} lines`)
})

t.test('each folder has its README, and the root README links to each', async (t) => {
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
