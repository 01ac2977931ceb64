// The broker accounts file (`<data_dir>/broker-accounts`, written by `svc hub user`, like
// Mosquitto's password file): one account a line, `name:role:board:hash`, `#` comments. Pure:
// text in, accounts or the first error (with its line) out; hub/broker/accounts-file.ts does the I/O.
import { NAME_RE } from '../../bridge/codec/names.ts'
import { fail, failAt, type Result } from '../../errors/codes.ts'
import { ROLES, type Role } from './acl.ts'
import { parseScryptHash, type ScryptHash } from './password.ts'

export interface Account {
  name: string
  role: Role
  /** The board a `board` account speaks for (its topics: `boards/<board>/`); null for other roles. */
  board: string | null
  /** The PHC string as stored. */
  hash: string
}

export interface CheckedAccount extends Account {
  scrypt: ScryptHash
}

export const USER_NAME_PATTERN = '[A-Za-z0-9_.-]{1,64}'
const USER_RE = new RegExp(`^${USER_NAME_PATTERN}$`)

export function userNameError(name: string): string | null {
  return USER_RE.test(name) ? null : `user name ${JSON.stringify(name)} must match ${USER_NAME_PATTERN}`
}

export function roleError(role: string): string | null {
  return (ROLES as readonly string[]).includes(role)
    ? null
    : `unknown role ${JSON.stringify(role)} (one of ${ROLES.join(', ')})`
}

/** The board a new account speaks for, or why the combination is wrong. */
export function boardFor(
  name: string,
  role: Role,
  board: string | undefined,
): Result<{ board: string | null }> {
  if (role !== 'board') {
    if (board !== undefined) return fail('BAD_INPUT', `--board applies to role board only (not ${role})`)
    return { ok: true, board: null }
  }
  const b = board ?? name
  if (!NAME_RE.test(b))
    return fail('BAD_INPUT', `board name ${JSON.stringify(b)} must match [A-Za-z0-9_.-]{1,64}`)
  return { ok: true, board: b }
}

/** A file that does not parse is BAD_CONFIG: the operator's secret file (errors/README.md, Codes). */
export type AccountsResult = Result<{ accounts: CheckedAccount[] }>

export function parseAccounts(text: string, file: string): AccountsResult {
  const accounts: CheckedAccount[] = []
  const seen = new Set<string>()
  const lines = text.split('\n')
  for (const [i, raw] of lines.entries()) {
    const line = raw.replace(/\r$/, '')
    if (line.trim() === '' || line.startsWith('#')) continue
    const at = `${file}:${i + 1}`
    const parts = line.split(':')
    if (parts.length !== 4) return fail('BAD_CONFIG', `${at}: expected name:role:board:hash`)
    const [name, role, board, hash] = parts as [string, string, string, string]
    const bad =
      userNameError(name) ??
      roleError(role) ??
      (role === 'board' && !NAME_RE.test(board)
        ? `account "${name}": role board needs a board name`
        : null) ??
      (role !== 'board' && board !== '' ? `account "${name}": only role board names a board` : null)
    if (bad) return fail('BAD_CONFIG', `${at}: ${bad}`)
    if (seen.has(name)) return fail('BAD_CONFIG', `${at}: account "${name}" appears twice`)
    seen.add(name)
    const scrypt = parseScryptHash(hash)
    if (!scrypt.ok) return failAt(`${at}: account "${name}": `, scrypt)
    accounts.push({
      name,
      role: role as Role,
      board: role === 'board' ? board : null,
      hash,
      scrypt: scrypt.value,
    })
  }
  return { ok: true, accounts }
}

const HEADER = [
  '# svc hub broker accounts, written by `svc hub user add|remove` (hub/README.md: Broker accounts).',
  '# name:role:board:scrypt hash, one account a line. Keep this file mode 0600.',
]

export function formatAccounts(accounts: readonly Account[]): string {
  const rows = [...accounts]
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((a) => `${a.name}:${a.role}:${a.board ?? ''}:${a.hash}`)
  return [...HEADER, ...rows, ''].join('\n')
}
