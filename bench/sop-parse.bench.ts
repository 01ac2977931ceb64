// Parsing 1,000 SOP directories (2,000 files) with loadSops, beside the baseline of just reading
// the same 2,000 files in the same process. Copies of the three examples with varied names.
import { mkdtemp, readFile, readdir, rm, writeFile, mkdir } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { loadSops } from '../sops/load.ts'

const COUNT = 1000
const ROUNDS = 5
const examples = join(dirname(fileURLToPath(import.meta.url)), '..', 'sops', 'examples')

async function setup(): Promise<{ root: string; files: string[] }> {
  const root = await mkdtemp(join(tmpdir(), 'svc-sop-bench-'))
  const sources = await Promise.all(
    (await readdir(examples)).sort().map(async (name) => ({
      name,
      toml: await readFile(join(examples, name, 'SOP.toml'), 'utf8'),
      md: await readFile(join(examples, name, 'SOP.md'), 'utf8'),
    })),
  )
  const files: string[] = []
  for (let i = 0; i < COUNT; i++) {
    const src = sources[i % sources.length]!
    const dir = join(root, `${src.name}-${i}`)
    await mkdir(dir)
    await writeFile(
      join(dir, 'SOP.toml'),
      src.toml.replace(`name = "${src.name}"`, `name = "${src.name}-${i}"`),
    )
    await writeFile(join(dir, 'SOP.md'), src.md)
    files.push(join(dir, 'SOP.toml'), join(dir, 'SOP.md'))
  }
  return { root, files }
}

async function time(fn: () => Promise<unknown>): Promise<number> {
  const t0 = process.hrtime.bigint()
  await fn()
  return Number(process.hrtime.bigint() - t0) / 1e6
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

const { root, files } = await setup()
try {
  // Warm both paths once (JIT, page cache) before measuring.
  await Promise.all(files.map((f) => readFile(f, 'utf8')))
  const warm = await loadSops(root)
  if (warm.sops.length !== COUNT || warm.diagnostics.length !== 0)
    throw new Error(
      `expected ${COUNT} clean SOPs, got ${warm.sops.length} and ${warm.diagnostics.length} diagnostics`,
    )
  const base: number[] = []
  const parse: number[] = []
  for (let r = 0; r < ROUNDS; r++) {
    base.push(await time(() => Promise.all(files.map((f) => readFile(f, 'utf8')))))
    parse.push(await time(() => loadSops(root)))
  }
  const b = median(base)
  const p = median(parse)
  console.log(`baseline  read ${files.length} files:            ${b.toFixed(1)} ms (median of ${ROUNDS})`)
  console.log(
    `loadSops  ${COUNT} SOP directories (parse+validate): ${p.toFixed(1)} ms (median of ${ROUNDS}), ${(p / COUNT).toFixed(3)} ms per SOP`,
  )
  console.log(`ratio     ${(p / b).toFixed(1)}x the baseline`)
} finally {
  await rm(root, { recursive: true, force: true })
}
