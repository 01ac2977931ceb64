// Reading and writing the broker accounts file. It holds password hashes, so like an SSH key it
// must be mode 0600 (or stricter): a file others can read or write is refused, not used.
import { randomBytes } from 'node:crypto'
import { mkdir, open, readFile, rename, rm, stat } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { type AccountsResult, type Account, formatAccounts, parseAccounts } from './accounts.ts'

export const ACCOUNTS_FILE = 'broker-accounts'

export function accountsPath(dataDir: string): string {
  return join(dataDir, ACCOUNTS_FILE)
}

/** The accounts in `file`; a missing file is no accounts. Errors name the file and the fix. */
export async function readAccountsFile(file: string): Promise<AccountsResult> {
  let mode: number
  try {
    const s = await stat(file)
    if (!s.isFile()) return { ok: false, error: `${file}: not a regular file` }
    mode = s.mode & 0o777
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { ok: true, accounts: [] }
    return { ok: false, error: `cannot read ${file}: ${(err as Error).message}` }
  }
  if ((mode & 0o077) !== 0)
    return {
      ok: false,
      error: `${file}: mode ${mode.toString(8).padStart(4, '0')} lets other users read or change broker password hashes; run chmod 600 ${file}`,
    }
  let text: string
  try {
    text = await readFile(file, 'utf8')
  } catch (err) {
    return { ok: false, error: `cannot read ${file}: ${(err as Error).message}` }
  }
  return parseAccounts(text, file)
}

/**
 * Replaces the file whole: a temp file created 0600 beside it, synced, renamed over it. A reader
 * (the running hub) sees the old accounts or the new ones, never half a file.
 */
export async function writeAccountsFile(file: string, accounts: readonly Account[]): Promise<void> {
  await mkdir(dirname(file), { recursive: true, mode: 0o700 })
  const tmp = `${file}.${randomBytes(6).toString('hex')}.tmp`
  const fh = await open(tmp, 'wx', 0o600)
  try {
    await fh.writeFile(formatAccounts(accounts), 'utf8')
    await fh.sync()
    await fh.close()
    await rename(tmp, file)
  } catch (err) {
    await fh.close().catch(() => {})
    await rm(tmp, { force: true })
    throw err
  }
}
