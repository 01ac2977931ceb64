// `svc hub backup`: one archive of the hub (hub/backup/README.md) — from the running hub over its
// local API, or from the stores themselves when no hub runs. The archive is checked as it is
// written (every entry against the manifest at its end) and only then given its name.
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { createWriteStream } from 'node:fs'
import { open, rename, rm, stat } from 'node:fs/promises'
import { isAbsolute, join } from 'node:path'
import { PassThrough, Readable, type Writable } from 'node:stream'
import type { ReadableStream as WebReadable } from 'node:stream/web'
import { readApiInfo } from '../hub/api/token.ts'
import { type Manifest, readArchive, writeArchive } from '../hub/backup/archive.ts'
import { encryptStream } from '../hub/backup/crypt.ts'
import { backupFiles } from '../hub/backup/files.ts'
import { ACCOUNTS_FILE } from '../hub/broker/accounts-file.ts'
import { OWNER_FILE } from '../hub/console/auth/owner-file.ts'
import { openStoresForBackup } from '../hub/backup/offline.ts'
import { loadConfig } from '../hub/daemon/config.ts'
import { svcPaths } from '../hub/paths.ts'
import { fetchHub, processAlive } from './hub-client.ts'
import { type CliIo, type Command, EXIT_OK, UsageError, UserError } from './io.ts'
import { parseOptions } from './options.ts'
import { errorText } from '../errors/text.ts'

const HELP = `usage: svc hub backup [--out FILE] [--no-history] [--passphrase-env VAR] [--config FILE]

One archive of the hub: hub.toml, the SOPs, the device key, broker accounts, the console's
password hash, and every store (runs, approvals, kept triggers, the broker's sessions and
queued messages, attested lines), each from a consistent snapshot. Taken while the hub runs
(through its local API) or, when none runs, from the stores directly. Restore it into an empty
home with svc hub restore FILE.

options:
  --out FILE            where to write it (default: ./svc-hub-backup-<UTC time>.tar.gz); never
                        overwritten; written mode 0600
  --no-history          leave out finished runs and admission records (what the hub would go on
                        with: unfinished runs, approvals, kept triggers, marks, every store else)
  --passphrase-env VAR  encrypt it with the passphrase in environment variable VAR
                        (scrypt + AES-256-GCM); restore needs the same
  --config FILE         hub.toml to read when no hub runs (default: $SVC_HOME/hub.toml)`

const OPTIONS = {
  out: { type: 'string' },
  'no-history': { type: 'boolean' },
  'passphrase-env': { type: 'string' },
  config: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const

/** The passphrase from the variable `--passphrase-env` names (never from the command line). */
export function passphraseFrom(name: string | undefined, io: CliIo): string | null {
  if (name === undefined) return null
  const v = io.env[name]
  if (v === undefined || v.length === 0)
    throw new UsageError(`--passphrase-env: environment variable ${name} is not set or is empty`)
  return v
}

const stamp = () =>
  new Date()
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z')
const mb = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MB`

/** The archive's entries that hold a secret or its hash, and how the command names them. */
const SECRETS: [string, string][] = [
  ['home/device.key', 'the device key'],
  ['home/market.key', 'the market key'],
  [`data/${ACCOUNTS_FILE}`, "the broker accounts' password hashes"],
  [`data/${OWNER_FILE}`, "the console owner's password hash"],
]

/** The gzip'd archive as a stream: from the running hub, or made here from its stores. */
async function archiveStream(
  io: CliIo,
  history: boolean,
  config: string | undefined,
): Promise<{ stream: Readable; from: string; done: Promise<unknown> }> {
  const paths = svcPaths(io.env)
  const info = await readApiInfo(paths.apiInfo)
  if (info.ok && (info.value.pid === undefined || processAlive(info.value.pid))) {
    const { res, url } = await fetchHub(io, 'POST', '/hub/backup', { history })
    if (res.status !== 200) {
      const body = (await res.json().catch(() => ({}))) as { error?: string }
      throw new UserError(body.error ?? `the hub answered ${res.status}`)
    }
    if (!res.body) throw new UserError('the hub sent no archive')
    return {
      stream: Readable.fromWeb(res.body as WebReadable),
      from: `the running hub at ${url}`,
      done: Promise.resolve(),
    }
  }
  const loaded = await loadConfig(config, io.env)
  if (!loaded.ok) throw new UserError(loaded.error)
  const c = loaded.config
  let opened
  try {
    opened = await openStoresForBackup(c.dataDir)
  } catch (err) {
    throw new UserError(`cannot read the stores in ${c.dataDir}: ${errorText(err)}`)
  }
  const files = await backupFiles({
    home: paths.home,
    dataDir: c.dataDir,
    sopsDir: c.sopsDir,
    configFile: c.file,
  })
  const stores = opened.stores(history)
  if (stores.length === 0 && files.length === 0) {
    await opened.close()
    throw new UserError(
      `nothing to back up: ${paths.home} holds no hub (no hub.toml, device key, SOPs or stores in ${c.dataDir}); set SVC_HOME to the hub's home`,
    )
  }
  const out = new PassThrough()
  const done = writeArchive(out, { files, stores, history })
    .catch((err: unknown) => out.destroy(err as Error))
    .finally(() => opened.close())
  return { stream: out, from: `the stores in ${c.dataDir} (no hub running)`, done }
}

export const command: Command = async (argv, io) => {
  const { values, positionals } = parseOptions(argv, OPTIONS, 'svc hub backup --help')
  if (values.help) {
    io.out(HELP)
    return EXIT_OK
  }
  if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"\n${HELP}`)
  const passphrase = passphraseFrom(values['passphrase-env'], io)
  const name = values.out ?? `svc-hub-backup-${stamp()}.tar.gz${passphrase ? '.enc' : ''}`
  const out = isAbsolute(name) ? name : join(io.cwd, name)
  if (
    await stat(out).then(
      () => true,
      () => false,
    )
  )
    throw new UserError(`${out} exists; a backup never overwrites a file: choose another --out`)
  const history = values['no-history'] !== true
  const { stream, from, done } = await archiveStream(io, history, values.config)

  // Written beside its name first: a backup cut short never carries the name of a good one.
  const partial = `${out}.${randomBytes(4).toString('hex')}.partial`
  const fh = await open(partial, 'wx', 0o600)
  await fh.close()
  const file = createWriteStream(partial, { flags: 'r+', mode: 0o600 })
  const tail: Writable = passphrase ? await encryptStream(passphrase) : file
  if (passphrase) (tail as PassThrough).pipe(file)
  let bytes = 0
  let shown = 0
  const counts: Record<string, number> = {}
  stream.on('data', (c: Buffer) => {
    bytes += c.length
    if (bytes - shown >= 64 * 1024 * 1024) {
      shown = bytes
      io.err(
        `… ${mb(bytes)} (${Object.entries(counts)
          .map(([s, n]) => `${s} ${n.toLocaleString('en-US')}`)
          .join(', ')})`,
      )
    }
  })
  const check = new PassThrough()
  stream.pipe(tail)
  stream.pipe(check)
  let manifest: Manifest
  try {
    ;[manifest] = await Promise.all([
      readArchive(check, {
        file: async () => undefined,
        entries: async (store, entries) => {
          for (const _ of entries) counts[store] = (counts[store] ?? 0) + 1
        },
      }),
      once(file, 'close'),
      done,
    ])
    const synced = await open(partial, 'r+')
    await synced.sync()
    await synced.close()
    await rename(partial, out)
  } catch (err) {
    stream.destroy()
    file.destroy()
    await rm(partial, { force: true })
    throw new UserError(`backup failed, nothing written: ${errorText(err)}`)
  }
  const size = (await stat(out)).size
  const stores = Object.entries(manifest.stores)
    .map(([s, f]) => `${s} ${f.entries.toLocaleString('en-US')} entries`)
    .join(', ')
  const kept = manifest.files.filter((f) => !f.path.startsWith('stores/'))
  io.out(`wrote ${out} (${mb(size)}, checked), from ${from}`)
  io.out(
    `  stores: ${stores || 'none'}; files: ${kept.length}${history ? '' : '; finished runs left out (--no-history)'}`,
  )
  const secrets = SECRETS.filter(([path]) => kept.some((f) => f.path === path)).map(([, what]) => what)
  if (secrets.length > 0)
    io.out(
      `  it holds ${secrets.join(', ')}: keep it private (it is mode 0600)${passphrase ? '' : '; not encrypted (--passphrase-env VAR encrypts it)'}`,
    )
  return EXIT_OK
}
