// `svc hub restore FILE`: an archive from `svc hub backup` into an empty home (hub/backup/README.md,
// "Restore"). Refuses a running hub and a home that has a hub's data, naming what it found.
import { existsSync } from 'node:fs'
import { readdir } from 'node:fs/promises'
import { isAbsolute, join } from 'node:path'
import { readApiInfo } from '../hub/api/token.ts'
import { ArchiveError } from '../hub/backup/archive.ts'
import { WrongPassphraseError } from '../hub/backup/crypt.ts'
import { RestoreError, restoreArchive } from '../hub/backup/restore.ts'
import { loadConfig } from '../hub/daemon/config.ts'
import { svcPaths } from '../hub/paths.ts'
import { passphraseFrom } from './hub-backup.ts'
import { processAlive } from './hub-client.ts'
import { type Command, EXIT_OK, UsageError, UserError } from './io.ts'
import { parseOptions } from './options.ts'

const HELP = `usage: svc hub restore FILE [--passphrase-env VAR]

Restores an archive from svc hub backup into $SVC_HOME (default ~/.svc), which must hold no hub:
no hub running, no hub.toml, no device key, and an empty data folder. The restored hub carries
on where the backup was taken: the same device identity, unfinished runs and approvals where they
were, attested lines with their states (the chain sync skips what is already on chain).

options:
  --passphrase-env VAR  the passphrase of an encrypted archive, in environment variable VAR`

const OPTIONS = {
  'passphrase-env': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const

async function nonEmpty(dir: string): Promise<boolean> {
  try {
    return (await readdir(dir)).length > 0
  } catch {
    return false
  }
}

export const command: Command = async (argv, io) => {
  const { values, positionals } = parseOptions(argv, OPTIONS, 'svc hub restore --help')
  if (values.help) {
    io.out(HELP)
    return EXIT_OK
  }
  if (positionals.length !== 1) throw new UsageError(`give one archive to restore\n${HELP}`)
  const file = isAbsolute(positionals[0]!) ? positionals[0]! : join(io.cwd, positionals[0]!)
  if (!existsSync(file)) throw new UserError(`${file} does not exist`)
  const passphrase = passphraseFrom(values['passphrase-env'], io)
  const paths = svcPaths(io.env)

  const info = await readApiInfo(paths.apiInfo)
  if (info.ok && info.value.pid !== undefined && processAlive(info.value.pid))
    throw new UserError(
      `a hub is running on ${paths.home} (pid ${info.value.pid}); restore only into a home no hub uses: stop it, or set SVC_HOME to an empty folder`,
    )
  const found: string[] = []
  for (const name of ['hub.toml', 'device.key']) if (existsSync(join(paths.home, name))) found.push(name)
  if (await nonEmpty(paths.data)) found.push('data/')
  if (found.length > 0)
    throw new UserError(
      `${paths.home} already has a hub (${found.join(', ')}); restore only into an empty home: move it aside, or set SVC_HOME to an empty folder`,
    )

  const shown = new Map<string, number>()
  let result
  try {
    result = await restoreArchive(
      file,
      // The folders the restored hub.toml names come from it once it is in place; until then the
      // defaults, which the restored hub.toml may move (checked below).
      { home: paths.home, dataDir: paths.data, sopsDir: paths.sops },
      passphrase,
      (store, n) => {
        if (n - (shown.get(store) ?? 0) >= 100_000) {
          shown.set(store, n)
          io.err(`… ${store}: ${n.toLocaleString('en-US')} entries`)
        }
      },
    )
  } catch (err) {
    if (err instanceof RestoreError || err instanceof ArchiveError || err instanceof WrongPassphraseError)
      throw new UserError(`restore failed, nothing restored: ${err.message}`)
    throw err
  }
  const loaded = await loadConfig(undefined, io.env)
  const moved =
    loaded.ok && (loaded.config.dataDir !== paths.data || loaded.config.sopsDir !== paths.sops)
      ? `\n  note: the restored hub.toml names data_dir ${loaded.ok ? loaded.config.dataDir : ''} and sops_dir ${loaded.ok ? loaded.config.sopsDir : ''}; the data and SOPs were restored to ${paths.data} and ${paths.sops}: move them there, or edit hub.toml`
      : ''
  const stores = Object.entries(result.entries)
    .map(([s, n]) => `${s} ${n.toLocaleString('en-US')} entries`)
    .join(', ')
  io.out(
    `restored ${file} (taken ${result.manifest.createdAt} by svc ${result.manifest.svc}) into ${paths.home}`,
  )
  io.out(
    `  runs: ${result.runs.finished.toLocaleString('en-US')} finished, ${result.runs.unfinished.toLocaleString('en-US')} unfinished; attested lines: ${result.lines.toLocaleString('en-US')}; files: ${result.files}`,
  )
  io.out(`  stores: ${stores || 'none'}${moved}`)
  io.out('start it with: svc hub')
  return EXIT_OK
}
