// `svc hub repair`: the hub's stores repaired while no hub runs (hub/stores/repair.ts), and what
// could not be recovered said per store (hub/stores/README.md, "Repair").
import { resolve } from 'node:path'
import { readApiInfo } from '../hub/api/token.ts'
import { loadConfig } from '../hub/daemon/config.ts'
import { historyBounds } from '../hub/engine/log/retention.ts'
import { svcPaths } from '../hub/paths.ts'
import {
  RepairRefused,
  STORE_NAMES,
  type StoreName,
  type StoreReport,
  repairStores,
} from '../hub/stores/repair.ts'
import { processAlive } from './hub-client.ts'
import { type CliIo, type Command, EXIT_FAIL, EXIT_OK, UsageError, UserError } from './io.ts'
import { parseOptions } from './options.ts'

const HELP = `usage: svc hub repair [--config FILE] [--store NAME] [--json]

Repairs the hub's stores under its data folder (hub.toml [hub] data_dir) when one will not open,
or after a power cut or a disk error: for each store there (engine, broker, attest), LevelDB's own
repair, then the store opened as the hub opens it; for the engine also its LevelDB applied again
from the history log and the run index rebuilt from it. Says per store what was done and what
could not be recovered. Files LevelDB replaced or could not read whole are moved into
<store>/lost/, never deleted.

Refuses while a hub runs on the same data folder: stop it first.

options:
  --config FILE  hub.toml to read (default: $SVC_HOME/hub.toml when it exists, else defaults)
  --store NAME   only this store: ${STORE_NAMES.join(', ')}
  --json         print the reports as JSON

Exit status: 0 when every store there opens after the repair (even if something was lost),
1 when one still does not. See hub/stores/README.md, "Repair".`

const OPTIONS = {
  config: { type: 'string' },
  store: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const

/** One store's report for a terminal. */
export function formatReport(r: StoreReport): string {
  if (!r.present) return `${r.store}  ${r.path}\n  not there: nothing to repair`
  const lines = [`${r.store}  ${r.path}`]
  if (r.before && !r.before.opens) lines.push(`  before  did not open: ${r.before.error}`)
  for (const d of r.done) lines.push(`  done    ${d}`)
  if (r.lost.length === 0) lines.push('  lost    nothing')
  for (const l of r.lost) lines.push(`  LOST    ${l}`)
  lines.push(r.opens ? '  opens   yes' : `  opens   NO: ${r.error ?? 'unknown error'}`)
  return lines.join('\n')
}

/** The hub whose local API info names this data folder, when its process is still there. */
async function runningHub(io: CliIo, dataDir: string): Promise<string | null> {
  const info = await readApiInfo(svcPaths(io.env).apiInfo)
  if (!info.ok || info.value.pid === undefined || !processAlive(info.value.pid)) return null
  if (info.value.dataDir !== undefined && resolve(info.value.dataDir) !== resolve(dataDir)) return null
  return `a hub is running on ${dataDir} (pid ${info.value.pid}, local API ${info.value.url})`
}

export const command: Command = async (argv, io) => {
  const { values, positionals } = parseOptions(argv, OPTIONS, 'svc hub repair --help')
  if (values.help) {
    io.out(HELP)
    return EXIT_OK
  }
  if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"\n\n${HELP}`)
  if (values.store !== undefined && !(STORE_NAMES as readonly string[]).includes(values.store))
    throw new UsageError(`--store: must be one of ${STORE_NAMES.join(', ')} (got "${values.store}")`)
  const loaded = await loadConfig(values.config, io.env)
  if (!loaded.ok) throw new UserError(loaded.error)
  const { dataDir, history } = loaded.config
  const running = await runningHub(io, dataDir)
  if (running)
    throw new UserError(
      `svc hub repair: ${running}; stop it first (\`systemctl stop svc-hub\` for the service, or Ctrl-C where \`svc hub\` runs), then run it again`,
    )
  let reports: StoreReport[]
  try {
    reports = await repairStores({
      dataDir,
      ...(values.store !== undefined ? { stores: [values.store as StoreName] } : {}),
      segmentBytes: historyBounds(history).segmentBytes,
      onProgress: (line) => io.err(line),
    })
  } catch (err) {
    if (err instanceof RepairRefused) throw new UserError(`svc hub repair: ${err.message}`)
    throw err
  }
  const ok = reports.every((r) => !r.present || r.opens)
  if (values.json) io.out(JSON.stringify({ dataDir, ok, stores: reports }, null, 2))
  else {
    io.out(`svc hub repair: ${dataDir}`)
    for (const r of reports) io.out(formatReport(r))
    if (!ok) io.out('a store still does not open: see hub/stores/README.md, "Repair", for what to do next')
  }
  return ok ? EXIT_OK : EXIT_FAIL
}
