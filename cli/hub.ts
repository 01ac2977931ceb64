// `svc hub`: run the hub daemon, or print the configuration it would run with.
import { stringify } from 'smol-toml'
import { type HubConfig, loadConfig } from '../hub/daemon/config.ts'
import { configToToml } from '../hub/daemon/config-toml.ts'
import { startHub } from '../hub/daemon/hub.ts'
import { createLog } from '../hub/log.ts'
import { realParts } from '../hub/daemon/real-parts.ts'
import { installSignalHandlers } from '../hub/daemon/shutdown.ts'
import { type CliIo, type Command, EXIT_OK, UsageError, UserError } from './io.ts'
import { parseOptions } from './options.ts'

const HELP = `usage: svc hub [run] [--config FILE] [--simulate BOARD]... [--log-level LEVEL]
       svc hub config [--config FILE] [--json]
       svc hub status [--json]          (the running hub: svc hub status --help)
       svc hub user add|remove|list …   (broker accounts: svc hub user --help)
       svc hub console-password [--clear] (the web console's owner password: --help)
       svc hub install-service [--user USER] [--home DIR] [--config FILE] [--out FILE | --print]
                                         (the systemd unit for this install: --help)
       svc hub repair [--json]           (a store that will not open: --help)
       svc hub backup [--out FILE] [--no-history] [--passphrase-env VAR]
                                         (one archive of the hub, while it runs: --help)
       svc hub restore FILE [--passphrase-env VAR]  (into an empty home: --help)

  run (default)  start the daemon: embedded MQTT broker (or broker.url), bridge, triggers,
                 SOP engine, tools, webhook gateway, local API, web console. Stops on SIGTERM/SIGINT;
                 SIGHUP reloads the SOPs.
  config         print the effective configuration (defaults filled in) and exit.
  status         the running hub's state, runs and MQTT backlog (from its local API).

options:
  --config FILE      hub.toml to read (default: $SVC_HOME/hub.toml when it exists, else defaults)
  --simulate BOARD   add a simulated board named BOARD (no hardware needed); repeatable
  --log-level LEVEL  fatal|error|warn|info|debug|trace|silent (overrides hub.log_level)
  --json             (config) print JSON instead of TOML`

const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const

const OPTIONS = {
  config: { type: 'string' },
  simulate: { type: 'string', multiple: true },
  'log-level': { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const

function parse(argv: string[]) {
  return parseOptions(argv, OPTIONS, 'svc hub --help')
}

/**
 * The effective config as hub.toml writes it (snake_case, every default filled in), so
 * `svc hub config > hub.toml` reads back to the same config. Secrets are never printed: a
 * comment names each one left out (TOML), or stderr does (JSON, which has no comments).
 */
export function printConfig(c: HubConfig, json: boolean): { out: string; note: string | null } {
  const { doc, hidden } = configToToml(c)
  const left =
    hidden.length > 0 ? `never printed: ${hidden.join(', ')} (set in ${c.file ?? 'hub.toml'})` : null
  if (json) return { out: JSON.stringify(doc, null, 2), note: left }
  const head = ['# svc hub config: the effective configuration, every default filled in']
  if (left) head.push(`# ${left}`)
  return { out: `${head.join('\n')}\n${stringify(doc)}`, note: null }
}

export async function resolveCliConfig(
  values: { config?: string; simulate?: string[]; 'log-level'?: string },
  io: CliIo,
): Promise<HubConfig> {
  const loaded = await loadConfig(values.config, io.env)
  if (!loaded.ok) throw new UserError(loaded.error)
  const config = loaded.config
  const level = values['log-level']
  if (level !== undefined) {
    if (!(LEVELS as readonly string[]).includes(level))
      throw new UsageError(`--log-level: must be one of ${LEVELS.join(', ')}`)
    config.logLevel = level as HubConfig['logLevel']
  }
  for (const name of values.simulate ?? []) {
    if (!/^[A-Za-z0-9_.-]{1,64}$/.test(name))
      throw new UsageError(`--simulate: board name "${name}" must match [A-Za-z0-9_.-]{1,64}`)
    if (config.boards.some((b) => b.name === name))
      throw new UsageError(`--simulate: board "${name}" is already configured`)
    config.boards.push({ name, port: `/dev/svc-sim-${name}`, simulate: true })
  }
  return config
}

export const command: Command = async (argv, io) => {
  // `svc hub user …` has options of its own (cli/hub-user.ts).
  if (argv[0] === 'user') return (await import('./hub-user.ts')).command(argv.slice(1), io)
  if (argv[0] === 'console-password')
    return (await import('./hub-console-password.ts')).command(argv.slice(1), io)
  if (argv[0] === 'status') return (await import('./hub-status.ts')).command(argv.slice(1), io)
  if (argv[0] === 'install-service')
    return (await import('./hub-install-service.ts')).command(argv.slice(1), io)
  if (argv[0] === 'repair') return (await import('./hub-repair.ts')).command(argv.slice(1), io)
  if (argv[0] === 'backup') return (await import('./hub-backup.ts')).command(argv.slice(1), io)
  if (argv[0] === 'restore') return (await import('./hub-restore.ts')).command(argv.slice(1), io)
  const { values, positionals } = parse(argv)
  if (values.help) {
    io.out(HELP)
    return EXIT_OK
  }
  const sub = positionals[0] ?? 'run'
  if (positionals.length > 1) throw new UsageError(`unexpected argument "${positionals[1]}"\n${HELP}`)
  if (sub === 'config') {
    const config = await resolveCliConfig(values, io)
    const { out, note } = printConfig(config, values.json === true)
    io.out(out)
    if (note) io.err(note)
    return EXIT_OK
  }
  if (sub !== 'run') throw new UsageError(`unknown subcommand "${sub}"\n${HELP}`)

  const config = await resolveCliConfig(values, io)
  const log = createLog(config.logLevel)
  let hub
  try {
    hub = await startHub(config, log, realParts(io.env, config))
  } catch (err) {
    const e = err as NodeJS.ErrnoException
    const msg =
      e.code === 'EADDRINUSE'
        ? `a port is already in use (${e.message}); set another port in hub.toml (port = 0 picks a free one)`
        : e.message
    throw new UserError(`could not start: ${msg}`)
  }
  const running = hub
  // The one line with a secret in it goes to the terminal (or the journal), never to the log.
  if (hub.console)
    io.out(
      `console  ${hub.console.url}  (sign in once with ${hub.console.loginLink()} ; valid 15 min, or set a password: svc hub console-password)`,
    )
  return new Promise<number>((resolve) => {
    const dispose = installSignalHandlers(running, log, (code) => {
      // 130: a second signal while closing: the operator wants out now.
      if (code === 130) process.exit(code)
      dispose()
      resolve(code)
    })
  })
}
