// Reading and writing the broker accounts file. It holds password hashes, so like an SSH key it
// must be mode 0600 (or stricter): a file others can read or write is refused, not used.
import { join } from 'node:path'
import { readSecretFile, replaceSecretFile } from '../secret-file.ts'
import { type AccountsResult, type Account, formatAccounts, parseAccounts } from './accounts.ts'

export const ACCOUNTS_FILE = 'broker-accounts'

export function accountsPath(dataDir: string): string {
  return join(dataDir, ACCOUNTS_FILE)
}

/** The accounts in `file`; a missing file is no accounts. Errors name the file and the fix. */
export async function readAccountsFile(file: string): Promise<AccountsResult> {
  const r = await readSecretFile(file, 'broker password hashes')
  if (!r.ok) return r
  return r.text === null ? { ok: true, accounts: [] } : parseAccounts(r.text, file)
}

/**
 * Replaces the file whole: a temp file created 0600 beside it, synced, renamed over it. A reader
 * (the running hub) sees the old accounts or the new ones, never half a file.
 */
export async function writeAccountsFile(file: string, accounts: readonly Account[]): Promise<void> {
  await replaceSecretFile(file, formatAccounts(accounts))
}
