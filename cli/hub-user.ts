// `svc hub user add|remove|list`: the embedded broker's accounts, like `mosquitto_passwd`. The
// file lives under the data dir (never hub.toml), mode 0600, passwords as scrypt hashes; the
// password comes from a prompt, standard input or a named environment variable, never argv
// (which other users see in `ps` and shells keep in history).
import { ROLE_RIGHTS, type Role } from '../hub/broker/acl.ts'
import { type Account, boardFor, roleError, userNameError } from '../hub/broker/accounts.ts'
import { accountsPath, readAccountsFile, writeAccountsFile } from '../hub/broker/accounts-file.ts'
import { isLoopbackHost } from '../net/loopback.ts'
import { hashPassword, PASSWORD_MAX_BYTES, passwordError } from '../hub/broker/password.ts'
import { type HubConfig, loadConfig } from '../hub/daemon/config.ts'
import { type CliIo, type Command, EXIT_OK, UsageError, UserError } from './io.ts'
import { parseOptions } from './options.ts'

export const USER_HELP = `usage: svc hub user add <name> --role admin|reader|board [--board BOARD]
                         [--password-stdin | --password-env VAR] [--config FILE]
       svc hub user remove <name> [--config FILE]
       svc hub user list [--json] [--config FILE]

  add      create an account on the embedded broker, or replace its password and role
  remove   delete an account (its clients are disconnected)
  list     the accounts: name, role, board (never the hashes)

roles:
  admin    publish and subscribe anywhere, send boards/<b>/cmd
  reader   subscribe only
  board    a board that speaks MQTT itself: publish and subscribe under boards/<board>/ only
           (<board> is --board, else the account name)
  Nobody but the hub publishes boards/+/availability or the topics of the hub's [[boards]].

the password: typed at a prompt (asked twice), or the first line of standard input
(--password-stdin), or the environment variable VAR (--password-env VAR); never an argument.
The file is <data_dir>/broker-accounts (mode 0600); a running hub re-reads it when it changes.`

const OPTIONS = {
  role: { type: 'string' },
  board: { type: 'string' },
  'password-stdin': { type: 'boolean' },
  'password-env': { type: 'string' },
  config: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const

/** Where a password can come from; tests give their own. */
export interface PasswordInput {
  /** All of standard input (a pipe or a file). */
  readStdin(): Promise<string>
  /** Asks on the terminal without echo; null when there is no terminal. */
  prompt: ((question: string) => Promise<string>) | null
}

export function userCommand(input: PasswordInput): Command {
  return async (argv, io) => {
    const { values, positionals } = parseOptions(argv, OPTIONS, 'svc hub user --help')
    if (values.help || positionals.length === 0) {
      io.out(USER_HELP)
      return values.help ? EXIT_OK : 2
    }
    const [sub, ...rest] = positionals
    const loaded = await loadConfig(values.config, io.env)
    if (!loaded.ok) throw new UserError(loaded.error)
    const config = loaded.config
    const file = accountsPath(config.dataDir)
    const read = await readAccountsFile(file)
    if (!read.ok) throw new UserError(`${read.error} (nothing changed)`)
    const accounts: Account[] = read.accounts.map(({ scrypt: _s, ...a }) => a)

    if (sub === 'list') {
      if (rest.length > 0) throw new UsageError(`unexpected argument "${rest[0]}"`)
      const rows = accounts.map((a) => ({ name: a.name, role: a.role, board: a.board }))
      if (values.json) io.out(JSON.stringify(rows))
      else if (rows.length === 0) io.out(`no broker accounts in ${file} (svc hub user add <name> --role …)`)
      else {
        const w = Math.max(4, ...rows.map((r) => r.name.length))
        io.out(`${'name'.padEnd(w)}  role    board`)
        for (const r of rows) io.out(`${r.name.padEnd(w)}  ${r.role.padEnd(6)}  ${r.board ?? ''}`.trimEnd())
      }
      return EXIT_OK
    }

    const name = rest[0]
    if (name === undefined) throw new UsageError(`${sub} needs an account name (see svc hub user --help)`)
    if (rest.length > 1)
      throw new UsageError(
        `unexpected argument "${rest[1]}": the password is never an argument (see --password-stdin)`,
      )
    const nameError = userNameError(name)
    if (nameError) throw new UsageError(nameError)

    if (sub === 'remove') {
      const left = accounts.filter((a) => a.name !== name)
      if (left.length === accounts.length) throw new UserError(`no account "${name}" in ${file}`)
      await writeAccountsFile(file, left)
      io.out(`account "${name}" removed from ${file}; a running hub disconnects its clients`)
      if (left.length === 0 && beyondLoopback(config))
        io.err(
          `warning: no accounts left, and broker.host is not loopback: the hub refuses every client (and will not start) until one is added`,
        )
      return EXIT_OK
    }
    if (sub !== 'add') throw new UsageError(`unknown command "${sub}" (see svc hub user --help)`)

    if (values.role === undefined) throw new UsageError('add needs --role admin|reader|board')
    const badRole = roleError(values.role)
    if (badRole) throw new UsageError(`--role: ${badRole}`)
    const role = values.role as Role
    const board = boardFor(name, role, values.board)
    if (!board.ok) throw new UsageError(board.error)
    if (board.board !== null && config.boards.some((b) => b.name === board.board))
      throw new UserError(
        `board "${board.board}" is a [[boards]] entry in ${config.file ?? 'hub.toml'}: its topics are the hub's, so this account could publish nothing; name another board (--board)`,
      )
    const password = await readPassword(values, input, io)
    const bad = passwordError(password)
    if (bad) throw new UserError(`${bad} (nothing changed)`)
    const hash = await hashPassword(password)
    const existed = accounts.some((a) => a.name === name)
    const next = [...accounts.filter((a) => a.name !== name), { name, role, board: board.board, hash }]
    await writeAccountsFile(file, next)
    const rights = ROLE_RIGHTS[role]
    const scope =
      rights.publish === 'own'
        ? `publishes and subscribes under boards/${board.board}/ only`
        : rights.publish === 'none'
          ? 'subscribes only'
          : `publishes and subscribes anywhere${rights.command ? ', sends board commands' : ''}`
    io.out(
      `account "${name}" ${existed ? 'updated' : 'added'} (role ${role}: ${scope}) in ${file} (mode 0600); a running hub picks it up`,
    )
    return EXIT_OK
  }
}

function beyondLoopback(config: HubConfig): boolean {
  const b = config.broker
  if (b.url !== null) return false
  return !isLoopbackHost(b.host) || (b.tls !== null && !isLoopbackHost(b.tls.host))
}

export async function readPassword(
  values: { 'password-stdin'?: boolean; 'password-env'?: string },
  input: PasswordInput,
  io: CliIo,
): Promise<string> {
  const env = values['password-env']
  if (values['password-stdin'] && env !== undefined)
    throw new UsageError('give one of --password-stdin and --password-env, not both')
  if (env !== undefined) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(env))
      throw new UsageError(`--password-env: "${env}" is not a variable name`)
    const v = io.env[env]
    if (v === undefined)
      throw new UserError(`--password-env: environment variable ${env} is not set (nothing changed)`)
    return v
  }
  if (values['password-stdin']) {
    const text = await input.readStdin()
    // The first line, as `docker login --password-stdin` takes it; a second line is a mistake.
    const lines = text.replace(/\r?\n$/, '').split(/\r?\n/)
    if (lines.length > 1)
      throw new UserError('--password-stdin: more than one line on standard input (nothing changed)')
    return lines[0] as string
  }
  if (!input.prompt)
    throw new UsageError('no terminal to ask for the password: use --password-stdin or --password-env VAR')
  const first = await input.prompt('Password: ')
  const again = await input.prompt('Password again: ')
  if (first !== again) throw new UserError('the passwords differ (nothing changed)')
  return first
}

export async function readStdin(): Promise<string> {
  let text = ''
  for await (const chunk of process.stdin) {
    text += String(chunk)
    if (Buffer.byteLength(text) > PASSWORD_MAX_BYTES + 2)
      throw new UserError(`--password-stdin: more than ${PASSWORD_MAX_BYTES} bytes (nothing changed)`)
  }
  return text
}

/** Reads a line from the terminal without echoing it. */
export function promptHidden(question: string): Promise<string> {
  const stdin = process.stdin
  process.stderr.write(question)
  stdin.setRawMode(true)
  stdin.setEncoding('utf8')
  stdin.resume()
  return new Promise((resolve, reject) => {
    let chars: string[] = []
    const finish = (): void => {
      stdin.off('data', onData)
      stdin.setRawMode(false)
      stdin.pause()
      process.stderr.write('\n')
    }
    const onData = (chunk: string): void => {
      for (const ch of chunk) {
        if (ch === '\r' || ch === '\n') {
          finish()
          return resolve(chars.join(''))
        }
        if (ch === '\u0003' || ch === '\u0004') {
          finish()
          return reject(new UserError('interrupted (nothing changed)'))
        }
        if (ch === '\u007f' || ch === '\b') chars = chars.slice(0, -1)
        else chars.push(ch)
      }
    }
    stdin.on('data', onData)
  })
}

export const command: Command = userCommand({
  readStdin,
  prompt: process.stdin.isTTY ? promptHidden : null,
})
