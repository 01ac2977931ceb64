// `npm run build`: the hub bundle into dist/ (see dist.ts).
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { buildDist } from './dist.ts'

const r = await buildDist(join(fileURLToPath(new URL('../..', import.meta.url)), 'dist'))
if (!r.ok) {
  process.stderr.write(`${r.error}\n`)
  process.exitCode = 1
} else process.stdout.write(`built ${r.entry}  (run: node ${r.entry} hub --config hub.toml)\n`)
