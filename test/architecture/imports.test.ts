// The import rules of the layout, read from the source: data flows one way (board → bridge →
// broker → triggers → engine → tools → stores → sync → market), so a low module never imports a
// high one. `npx tap test/architecture/imports.test.ts` checks them; the README lists them.
import { readFileSync } from 'node:fs'
import { dirname, join, normalize, relative } from 'node:path'
import t from 'tap'
import { root, sourceFiles } from './source-files.ts'

const files = sourceFiles

// Static imports, re-exports and dynamic import('…') of our own files (relative specifiers).
const SPEC =
  /(?:^|[\s;])(?:import|export)\s[^'"]*?from\s*['"](\.{1,2}\/[^'"]+)['"]|import\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/gm

interface Edge {
  from: string
  to: string
}

function edgesOf(file: string): Edge[] {
  let text: string
  try {
    text = readFileSync(join(root, file), 'utf8')
  } catch {
    return [] // listed by git but deleted in the working tree
  }
  const out: Edge[] = []
  for (const m of text.matchAll(SPEC)) {
    const spec = (m[1] ?? m[2]) as string
    out.push({ from: file, to: normalize(join(dirname(file), spec)) })
  }
  return out
}

const edges = files.flatMap(edgesOf)
const under = (dir: string) => (f: string) => f.startsWith(`${dir}/`)

function offenders(from: (f: string) => boolean, to: (f: string) => boolean): string[] {
  return edges.filter((e) => from(e.from) && to(e.to)).map((e) => `${e.from} → ${e.to}`)
}

t.test('the reader sees the imports it checks', async (t) => {
  // Guards against a regex that matches nothing and so passes every rule below.
  t.ok(edges.length > 300, `${edges.length} import edges read`)
  t.ok(
    edges.some((e) => e.from === 'hub/daemon/hub.ts' && e.to === 'hub/engine/index.ts'),
    'a known static import is seen',
  )
  t.ok(
    edges.some((e) => e.from === 'hub/daemon/real-parts.ts' && e.to.startsWith('hub/attest/')),
    'a known dynamic import is seen',
  )
  t.ok(
    edges.some((e) => e.from === 'cli/hub.ts' && e.to === 'hub/daemon/hub.ts'),
    'the CLI at the top is read',
  )
})

t.test(
  'tools/ imports nothing from hub/ (ports are declared in tools/, implemented by the hub)',
  async (t) => {
    t.same(offenders(under('tools'), under('hub')), [])
  },
)

t.test('bridge/ imports nothing from boards/, hub/, sops/, tools/ or market/', async (t) => {
  const above = (f: string) => ['boards', 'hub', 'sops', 'tools', 'market'].some((d) => under(d)(f))
  t.same(offenders(under('bridge'), above), [])
})

// errors/codes.ts and errors/text.ts are pure too: the codes and the one way a thrown value becomes text.
const PURE_ERRORS = new Set(['errors/codes.ts', 'errors/text.ts'])

t.test(
  'sops/ is pure: it imports only itself, the shared mqtt/ helpers and the error codes and text',
  async (t) => {
    t.same(
      offenders(under('sops'), (f) => !under('sops')(f) && !under('mqtt')(f) && !PURE_ERRORS.has(f)),
      [],
    )
  },
)

t.test(
  'errors/ (codes and the one Fastify error path every server shares) imports nothing of ours',
  async (t) => {
    t.same(
      offenders(under('errors'), (f) => !under('errors')(f)),
      [],
    )
  },
)

t.test('hub/ never imports market/, and market/ never imports hub/', async (t) => {
  t.same(offenders(under('hub'), under('market')), [])
  t.same(offenders(under('market'), under('hub')), [], 'and the market never imports the hub')
})

t.test('cli/ sits on top: nothing outside it imports it, and only it assembles hub and market', async (t) => {
  t.same(
    offenders((f) => !under('cli')(f), under('cli')),
    [],
  )
  const reaches = (dir: string) => new Set(edges.filter((e) => under(dir)(e.to)).map((e) => e.from))
  const market = reaches('market')
  const both = [...reaches('hub')].filter((f) => market.has(f) && !under('cli')(f))
  t.same(both, [], 'no file outside cli/ imports both hub/ and market/')
})

t.test(
  'shared folders (records/, chain/, config/, mqtt/, net/, web/, errors/, files/) import neither hub/ nor market/',
  async (t) => {
    const shared = (f: string) =>
      ['records', 'chain', 'config', 'mqtt', 'net', 'web', 'errors', 'files'].some((d) => under(d)(f))
    t.same(
      offenders(shared, (f) => under('hub')(f) || under('market')(f)),
      [],
    )
  },
)

t.test('only the CLI imports the daemon (hub/daemon/hub.ts)', async (t) => {
  t.same(
    offenders(
      (f) => !under('cli')(f),
      (f) => f === 'hub/daemon/hub.ts',
    ),
    [],
  )
})

t.test('no import cycles between files', async (t) => {
  const next = new Map<string, string[]>()
  for (const e of edges) next.set(e.from, [...(next.get(e.from) ?? []), e.to])
  const state = new Map<string, 'open' | 'done'>()
  const cycles: string[] = []
  const walk = (f: string, path: string[]): void => {
    if (state.get(f) === 'done') return
    if (state.get(f) === 'open') {
      cycles.push([...path.slice(path.indexOf(f)), f].map((p) => relative('.', p)).join(' → '))
      return
    }
    state.set(f, 'open')
    for (const n of next.get(f) ?? []) walk(n, [...path, f])
    state.set(f, 'done')
  }
  for (const f of files) walk(f, [])
  t.same(cycles, [])
})
