// `npm run bench`: runs every bench/*.bench.ts in its own process, one after another, so one
// benchmark's heap and sockets never colour the next. Each script prints its own figures beside
// the baseline it measured in the same process.
import { spawnSync } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const only = process.argv.slice(2)
const scripts = readdirSync(here)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => only.length === 0 || only.some((o) => f.includes(o)))
  .sort()
let failed = 0
for (const file of scripts) {
  process.stdout.write(`\n== ${file}\n`)
  const r = spawnSync(process.execPath, ['--import', 'tsx', join(here, file)], { stdio: 'inherit' })
  if (r.status !== 0) failed++
}
process.exitCode = failed > 0 ? 1 : 0
