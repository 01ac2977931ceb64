// The console owner's password hash: `<data_dir>/console-owner`, one scrypt PHC line written by
// `svc hub console-password`, mode 0600 like the broker accounts (a file others can read is
// refused). Its own file rather than a line in broker-accounts: a broker account is an MQTT
// identity with topic rights, and a console role there would be one more role the broker's ACL
// has to refuse; the hashing (hub/broker/password.ts) is the same.
import { randomBytes } from 'node:crypto'
import { mkdir, open, readFile, rename, rm, stat } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { parseScryptHash, type ScryptHash } from '../../broker/password.ts'

export const OWNER_FILE = 'console-owner'

export function ownerPath(dataDir: string): string {
  return join(dataDir, OWNER_FILE)
}

export type OwnerRead = { ok: true; hash: ScryptHash | null } | { ok: false; error: string }

/** The stored hash; a missing file is no password (null). Errors name the file and the fix. */
export async function readOwnerFile(file: string): Promise<OwnerRead> {
  try {
    const s = await stat(file)
    if (!s.isFile()) return { ok: false, error: `${file}: not a regular file` }
    const mode = s.mode & 0o777
    if ((mode & 0o077) !== 0)
      return {
        ok: false,
        error: `${file}: mode ${mode.toString(8).padStart(4, '0')} lets other users read or change the console password hash; run chmod 600 ${file}`,
      }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { ok: true, hash: null }
    return { ok: false, error: `cannot read ${file}: ${(err as Error).message}` }
  }
  let text: string
  try {
    text = await readFile(file, 'utf8')
  } catch (err) {
    return { ok: false, error: `cannot read ${file}: ${(err as Error).message}` }
  }
  const line = text.split('\n').find((l) => l.trim() !== '' && !l.startsWith('#'))
  if (line === undefined) return { ok: true, hash: null }
  const parsed = parseScryptHash(line.trim())
  if (!parsed.ok) return { ok: false, error: `${file}: ${parsed.error}` }
  return { ok: true, hash: parsed.value }
}

/** Replaces the file whole (temp file 0600, synced, renamed): a reader sees old or new. */
export async function writeOwnerFile(file: string, phc: string): Promise<void> {
  await mkdir(dirname(file), { recursive: true, mode: 0o700 })
  const tmp = `${file}.${randomBytes(6).toString('hex')}.tmp`
  const fh = await open(tmp, 'wx', 0o600)
  try {
    await fh.writeFile(
      `# svc hub console owner password (scrypt), written by \`svc hub console-password\`. Keep mode 0600.\n${phc}\n`,
      'utf8',
    )
    await fh.sync()
    await fh.close()
    await rename(tmp, file)
  } catch (err) {
    await fh.close().catch(() => {})
    await rm(tmp, { force: true })
    throw err
  }
}
