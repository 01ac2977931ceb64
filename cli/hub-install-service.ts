// `svc hub install-service`: writes the systemd unit for this install (hub/service/unit.ts) with
// the paths read from the machine: this node, this checkout (its dist/ bundle when built), perl
// for the notify wrapper, the user, SVC_HOME and hub.toml, and the folders hub.toml has the hub
// write elsewhere. Then it prints the commands that are still to run, and only those.
import { constants, existsSync } from 'node:fs'
import { access, readFile, stat } from 'node:fs/promises'
import { basename, delimiter, dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { loadConfig } from '../hub/daemon/config.ts'
import { writeFileAtomic } from '../files/atomic-file.ts'
import { findJemalloc } from '../hub/service/jemalloc.ts'
import { PI_INSTALL, type UnitInput, WRAPPER_PATH, renderUnit, unitInputError } from '../hub/service/unit.ts'
import { type CliIo, type Command, EXIT_OK, UsageError, UserError } from './io.ts'
import { parseOptions } from './options.ts'

const SYSTEM_DIR = '/etc/systemd/system'
const DEFAULT_OUT = join(SYSTEM_DIR, PI_INSTALL.name)

export const INSTALL_SERVICE_HELP = `usage: svc hub install-service [--user USER] [--home DIR] [--config FILE]
                              [--out FILE | --print] [--force]

Writes the systemd unit that runs this install of the hub (Type=notify, with a watchdog: see
hub/README.md, "Watchdog and service"): this node binary, this checkout (dist/main.js when
npm run build has made it, else bin/svc.js through tsx), the user, SVC_HOME and hub.toml.
Prints the commands still to run to enable and start it.

  --user USER    the user the hub runs as (default ${PI_INSTALL.user}); the unit adds the dialout group
  --home DIR     SVC_HOME: SOPs, data, tokens (default ${PI_INSTALL.home})
  --config FILE  the hub.toml it reads (default ${PI_INSTALL.config})
  --out FILE     where to write the unit (default ${DEFAULT_OUT})
  --print        print the unit on stdout instead (the commands go to stderr)
  --force        replace an existing unit that differs`

const OPTIONS = {
  user: { type: 'string' },
  home: { type: 'string' },
  config: { type: 'string' },
  out: { type: 'string' },
  print: { type: 'boolean' },
  force: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const

const under = (p: string, dir: string): boolean => p === dir || p.startsWith(`${dir}/`)

/** The checkout this code runs from (from cli/ or from a dist/ chunk): where the wrapper is. */
function findRoot(): string | null {
  for (let dir = dirname(fileURLToPath(import.meta.url)); ; dir = dirname(dir)) {
    if (existsSync(join(dir, WRAPPER_PATH)) && existsSync(join(dir, 'package.json'))) return dir
    if (dirname(dir) === dir) return null
  }
}

async function executable(p: string): Promise<boolean> {
  try {
    await access(p, constants.X_OK)
    return (await stat(p)).isFile()
  } catch {
    return false
  }
}

/** perl on PATH, as a shell finds it (perl-base puts it in /usr/bin on Debian). */
async function findPerl(env: NodeJS.ProcessEnv): Promise<string | null> {
  const dirs = (env.PATH ?? '').split(delimiter).filter((d) => d.startsWith('/'))
  for (const d of [...dirs, '/usr/bin']) if (await executable(join(d, 'perl'))) return join(d, 'perl')
  return null
}

/** The uid of `user` from /etc/passwd; null: no such user; undefined: the file cannot be read. */
async function uidOf(user: string): Promise<number | null | undefined> {
  let text: string
  try {
    text = await readFile('/etc/passwd', 'utf8')
  } catch {
    return undefined
  }
  if (/^\d+$/.test(user)) return Number(user)
  for (const line of text.split('\n')) {
    const f = line.split(':')
    if (f[0] === user && f[2] !== undefined) return Number(f[2])
  }
  return null
}

const q = (s: string): string => (/^[A-Za-z0-9_./:=@%+-]+$/.test(s) ? s : `'${s.replaceAll("'", `'\\''`)}'`)

function firstDifference(a: string, b: string): string {
  const x = a.split('\n')
  const y = b.split('\n')
  for (let i = 0; i < Math.max(x.length, y.length); i++)
    if (x[i] !== y[i])
      return `line ${i + 1}: ${JSON.stringify(x[i] ?? '(end of file)')} here, ${JSON.stringify(y[i] ?? '(end of file)')} for this install`
  return 'no line differs'
}

export const command: Command = async (argv, io: CliIo) => {
  const { values, positionals } = parseOptions(argv, OPTIONS, 'svc hub install-service --help')
  if (values.help) {
    io.out(INSTALL_SERVICE_HELP)
    return EXIT_OK
  }
  if (positionals.length > 0)
    throw new UsageError(`unexpected argument "${positionals[0]}"\n${INSTALL_SERVICE_HELP}`)
  if (values.print && values.out !== undefined) throw new UsageError('--print and --out: give one')
  for (const k of ['user', 'home', 'config', 'out'] as const)
    if (values[k] === '') throw new UsageError(`--${k}: empty`)

  const root = findRoot()
  if (!root)
    throw new UserError(`cannot find the checkout (${WRAPPER_PATH} beside package.json) above this program`)
  const perl = await findPerl(io.env)
  if (!perl)
    throw new UserError(
      `perl is not on PATH: the unit starts the hub through ${WRAPPER_PATH} (Debian's perl-base, on every Debian and Raspberry Pi OS)`,
    )
  const user = values.user ?? PI_INSTALL.user
  const home = resolve(io.cwd, values.home ?? PI_INSTALL.home)
  const config = resolve(io.cwd, values.config ?? PI_INSTALL.config)
  const out = values.print ? null : resolve(io.cwd, values.out ?? DEFAULT_OUT)
  const name = out && basename(out).endsWith('.service') ? basename(out) : PI_INSTALL.name
  const unitName = name.replace(/\.service$/, '')
  const entry = existsSync(join(root, 'dist', 'main.js')) ? 'dist' : 'tsx'

  const notes: string[] = []
  const steps: string[] = []
  // What hub.toml has the hub write outside SVC_HOME must be writable under ProtectSystem=strict.
  let writable: string[] = []
  let configStep: string | null = null
  if (existsSync(config)) {
    const { SVC_SOPS_DIR: _, ...env } = io.env
    const loaded = await loadConfig(config, { ...env, SVC_HOME: home })
    if (!loaded.ok)
      throw new UserError(`${loaded.error} (the hub would not start with it: fix it, then run this again)`)
    writable = [loaded.config.dataDir, loaded.config.sopsDir].filter((p) => !under(p, home))
  } else {
    notes.push(`${config} does not exist yet; the hub will not start without it`)
    configStep = `sudo install -d ${q(dirname(config))} && (cd ${q(root)} && SVC_HOME=${q(home)} npx svc hub config) | sudo tee ${q(config)} >/dev/null   # every key at its default; edit [[boards]]`
  }

  // jemalloc when this node runs with it: memory that settles flat after bursts (unit.ts says why).
  const found = await findJemalloc(process.execPath)
  if (found.path === null)
    notes.push(
      `the unit keeps glibc's malloc: ${found.why}; with jemalloc the hub's memory settles flat after bursts (hub/README.md, "Raspberry Pi")`,
    )
  const jemalloc = found.path
  const input: UnitInput = {
    node: process.execPath,
    perl,
    root,
    entry,
    user,
    home,
    config,
    writable,
    name,
    jemalloc,
  }
  const bad = unitInputError(input)
  if (bad) throw new UsageError(bad)
  const unit = renderUnit(input)

  const uid = await uidOf(user)
  if (uid === null)
    steps.unshift(`sudo useradd --system --home-dir ${q(home)} --shell /usr/sbin/nologin ${q(user)}`)
  // systemd makes a StateDirectory= (/var/lib/<name>) and hands it to the user; elsewhere it is ours to do.
  if (!/^\/var\/lib\/[^/]+$/.test(home)) {
    const st = await stat(home).catch(() => null)
    if (!st) steps.push(`sudo install -d -o ${q(user)} -m 0750 ${q(home)}`)
    else if (typeof uid === 'number' && st.uid !== uid) steps.push(`sudo chown -R ${q(user)} ${q(home)}`)
  }
  if (configStep) steps.push(configStep)
  if (entry === 'tsx')
    notes.push(
      'dist/main.js is not built: the unit runs bin/svc.js through tsx (~30 MB more memory); `npm run build`, then run this again',
    )

  let said: string
  if (out === null) {
    io.out(unit)
    said = `the unit for ${root} is above`
    steps.push(
      `sudo tee ${q(join(SYSTEM_DIR, name))} < FILE >/dev/null   # FILE: where you saved the unit above (or run this again with sudo, without --print)`,
    )
  } else {
    const existing = await readFile(out, 'utf8').catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return null
      throw new UserError(`cannot read ${out}: ${err.message}`)
    })
    if (existing === unit) said = `${out} is already this unit; nothing written`
    else {
      if (existing !== null && !values.force)
        throw new UserError(
          `${out} exists and differs from the unit for this install (${firstDifference(existing, unit)}); --force replaces it, --print shows the new one`,
        )
      try {
        // Atomic: a power cut while replacing a unit must not leave systemd half a file.
        await writeFileAtomic(out, unit, { mode: 0o644, makeDir: false })
      } catch (err) {
        const e = err as NodeJS.ErrnoException
        const hint =
          e.code === 'EACCES' || e.code === 'EPERM' || e.code === 'EROFS'
            ? ': run it with sudo, or write it with --out FILE (or --print) and copy it'
            : ''
        throw new UserError(`cannot write ${out}: ${e.code ?? e.message}${hint}`)
      }
      said = `${existing === null ? 'wrote' : 'replaced'} ${out}`
    }
    if (dirname(out) !== SYSTEM_DIR) steps.push(`sudo cp ${q(out)} ${q(join(SYSTEM_DIR, name))}`)
  }
  // `--print > file` keeps the unit alone on stdout.
  const say = out === null ? io.err : io.out
  say(
    [
      said,
      `  runs   ${process.execPath} ${entry === 'dist' ? join(root, 'dist/main.js') : join(root, 'bin/svc.js')} hub --config ${config}`,
      `  as     ${user}, SVC_HOME=${home}${writable.length > 0 ? `, also writing ${writable.join(', ')}` : ''}`,
      `  malloc ${jemalloc ? `jemalloc (${jemalloc} preloaded)` : "glibc's"}`,
      ...notes.map((n) => `note: ${n}`),
      'next:',
      ...[
        ...steps,
        'sudo systemctl daemon-reload',
        `sudo systemctl enable --now ${unitName}`,
        `systemctl status ${unitName}   # Status: "serving: …", or why the hub is unhealthy`,
        `journalctl -u ${unitName} -f`,
      ].map((s) => `  ${s}`),
    ].join('\n'),
  )
  return EXIT_OK
}
