// Reading and writing the broker accounts file. It holds password hashes, so like an SSH key it
// must be mode 0600 (or stricter): a file others can read or write is refused, not used.
import { join } from 'node:path'
import { fail } from '../../errors/codes.ts'
import { readSecretFile, replaceSecretFile } from '../secret-file.ts'
import { type AccountsResult, type Account, formatAccounts, parseAccounts } from './accounts.ts'

export const ACCOUNTS_FILE = 'broker-accounts'

export function accountsPath(dataDir: string): string {
  return join(dataDir, ACCOUNTS_FILE)
}

// A damaged file stops the start (hub/files/README.md: Small files): the hashes are the owner's
// work the hub cannot make again, and going on without them changes who may connect and publish.
const ACCOUNTS_FIX =
  'put it back from a backup, correct the line named, or remove the file and add the accounts again with `svc hub user add`'

/** The accounts in `file`; a missing file is no accounts. Errors name the file and the fix. */
export async function readAccountsFile(file: string): Promise<AccountsResult> {
  const r = await readSecretFile(file, 'broker password hashes')
  if (!r.ok) return r
  if (r.text === null) return { ok: true, accounts: [] }
  // Every write starts with a header, so 0 bytes is a file cut short, not one with no accounts.
  if (r.text.length === 0) return fail('BAD_CONFIG', `${file}: empty (0 bytes); ${ACCOUNTS_FIX}`)
  const parsed = parseAccounts(r.text, file)
  return parsed.ok ? parsed : { ...parsed, error: `${parsed.error}; ${ACCOUNTS_FIX}` }
}

/** Replaces the file whole and atomically: a reader (the running hub) sees the old accounts or the new. */
export async function writeAccountsFile(file: string, accounts: readonly Account[]): Promise<void> {
  await replaceSecretFile(file, formatAccounts(accounts))
}
