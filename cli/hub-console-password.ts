// `svc hub console-password`: sets (or with --clear removes) the console owner's password, stored
// as a scrypt hash in <data_dir>/console-owner (mode 0600). The password comes from a prompt,
// standard input or a named environment variable, never argv, as for `svc hub user add`.
import { isLoopbackHost } from '../net/loopback.ts'
import { hashPassword, passwordError } from '../hub/broker/password.ts'
import { ownerPath, readOwnerFile, writeOwnerFile } from '../hub/console/auth/owner-file.ts'
import { loadConfig } from '../hub/daemon/config.ts'
import { type PasswordInput, promptHidden, readPassword, readStdin } from './hub-user.ts'
import { type Command, EXIT_OK, UsageError, UserError } from './io.ts'
import { parseOptions } from './options.ts'
import { rm } from 'node:fs/promises'

export const CONSOLE_PASSWORD_HELP = `usage: svc hub console-password [--password-stdin | --password-env VAR] [--config FILE]
       svc hub console-password --clear [--config FILE]

Sets the password that signs the owner in to the hub console (hub/README.md: Console).
Needed before console.host may leave loopback; on loopback the one-time link that svc hub
prints at start signs in too. A running hub uses the new password at the next sign-in;
sessions already open stay open.

the password: typed at a prompt (asked twice), or the first line of standard input
(--password-stdin), or the environment variable VAR (--password-env VAR); never an argument.
It is stored as a scrypt hash in <data_dir>/console-owner (mode 0600).
  --clear   remove the password (only the one-time link signs in then, and only on loopback)`

const OPTIONS = {
  'password-stdin': { type: 'boolean' },
  'password-env': { type: 'string' },
  clear: { type: 'boolean' },
  config: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const

export function consolePasswordCommand(input: PasswordInput): Command {
  return async (argv, io) => {
    const { values, positionals } = parseOptions(argv, OPTIONS, 'svc hub console-password --help')
    if (values.help) {
      io.out(CONSOLE_PASSWORD_HELP)
      return EXIT_OK
    }
    if (positionals.length > 0)
      throw new UsageError(
        `unexpected argument "${positionals[0]}": the password is never an argument (see --password-stdin)`,
      )
    const loaded = await loadConfig(values.config, io.env)
    if (!loaded.ok) throw new UserError(loaded.error)
    const config = loaded.config
    const file = ownerPath(config.dataDir)
    const read = await readOwnerFile(file)
    if (!read.ok) throw new UserError(`${read.error} (nothing changed)`)
    if (values.clear) {
      if (values['password-stdin'] || values['password-env'] !== undefined)
        throw new UsageError('--clear takes no password')
      if (read.hash === null) {
        io.out(`no console password was set (${file} does not exist)`)
        return EXIT_OK
      }
      await rm(file, { force: true })
      io.out(`console password removed (${file})`)
      if (!isLoopbackHost(config.console.host))
        io.err(
          `warning: console.host "${config.console.host}" is beyond loopback: the hub will not start until a password is set again`,
        )
      return EXIT_OK
    }
    const password = await readPassword(values, input, io)
    const bad = passwordError(password)
    if (bad) throw new UserError(`${bad} (nothing changed)`)
    await writeOwnerFile(file, await hashPassword(password))
    io.out(
      `console password ${read.hash === null ? 'set' : 'changed'} in ${file} (mode 0600); a running hub uses it at the next sign-in`,
    )
    return EXIT_OK
  }
}

export const command: Command = consolePasswordCommand({
  readStdin,
  prompt: process.stdin.isTTY ? promptHidden : null,
})
