// Files that hold secrets or their hashes (broker accounts, the console owner's password): like
// an SSH key they must be mode 0600 or stricter, so one others can read or change is refused,
// not used; and they are replaced whole, so a reader sees the old file or the new, never half.
import { randomBytes } from 'node:crypto'
import { mkdir, open, readFile, rename, rm, stat } from 'node:fs/promises'
import { dirname } from 'node:path'

export type SecretRead = { ok: true; text: string | null } | { ok: false; error: string }

/**
 * The file's text, or null when there is no file. `what` names what it holds, for the error
 * when its mode lets other users in ("broker password hashes").
 */
export async function readSecretFile(file: string, what: string): Promise<SecretRead> {
  let mode: number
  try {
    const s = await stat(file)
    if (!s.isFile()) return { ok: false, error: `${file}: not a regular file` }
    mode = s.mode & 0o777
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { ok: true, text: null }
    return { ok: false, error: `cannot read ${file}: ${(err as Error).message}` }
  }
  if ((mode & 0o077) !== 0)
    return {
      ok: false,
      error: `${file}: mode ${mode.toString(8).padStart(4, '0')} lets other users read or change ${what}; run chmod 600 ${file}`,
    }
  try {
    return { ok: true, text: await readFile(file, 'utf8') }
  } catch (err) {
    return { ok: false, error: `cannot read ${file}: ${(err as Error).message}` }
  }
}

/** Replaces `file` whole: a temp file created 0600 beside it, synced, renamed over it. */
export async function replaceSecretFile(file: string, text: string): Promise<void> {
  await mkdir(dirname(file), { recursive: true, mode: 0o700 })
  const tmp = `${file}.${randomBytes(6).toString('hex')}.tmp`
  const fh = await open(tmp, 'wx', 0o600)
  try {
    await fh.writeFile(text, 'utf8')
    await fh.sync()
    await fh.close()
    await rename(tmp, file)
  } catch (err) {
    await fh.close().catch(() => {})
    await rm(tmp, { force: true })
    throw err
  }
}
