// Files that hold secrets or their hashes (broker accounts, the console owner's password): like
// an SSH key they must be mode 0600 or stricter, so one others can read or change is refused,
// not used; and they are replaced whole, so a reader sees the old file or the new, never half.
import { readFile, stat } from 'node:fs/promises'
import { fail, type Result } from '../errors/codes.ts'
import { errorText } from '../errors/text.ts'
import { writeFileAtomic } from '../files/atomic-file.ts'

export type SecretRead = Result<{ text: string | null }>

/**
 * The file's text, or null when there is no file. `what` names what it holds, for the error
 * when its mode lets other users in ("broker password hashes").
 */
export async function readSecretFile(file: string, what: string): Promise<SecretRead> {
  let mode: number
  try {
    const s = await stat(file)
    if (!s.isFile()) return fail('BAD_CONFIG', `${file}: not a regular file`)
    mode = s.mode & 0o777
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { ok: true, text: null }
    return fail('IO_FAILED', `cannot read ${file}: ${errorText(err)}`)
  }
  if ((mode & 0o077) !== 0)
    return fail(
      'BAD_CONFIG',
      `${file}: mode ${mode.toString(8).padStart(4, '0')} lets other users read or change ${what}; run chmod 600 ${file}`,
    )
  try {
    return { ok: true, text: await readFile(file, 'utf8') }
  } catch (err) {
    return fail('IO_FAILED', `cannot read ${file}: ${errorText(err)}`)
  }
}

/** Replaces `file` whole, mode 0600, as every small file is written (hub/files/atomic-file.ts). */
export async function replaceSecretFile(file: string, text: string): Promise<void> {
  await writeFileAtomic(file, text, { mode: 0o600, dirMode: 0o700 })
}
