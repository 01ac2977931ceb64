// The console owner's password hash: `<data_dir>/console-owner`, one scrypt PHC line written by
// `svc hub console-password`, mode 0600 like the broker accounts (a file others can read is
// refused). Its own file rather than a line in broker-accounts: a broker account is an MQTT
// identity with topic rights, and a console role there would be one more role the broker's ACL
// has to refuse; the hashing (hub/broker/password.ts) is the same.
import { join } from 'node:path'
import { fail, type Result } from '../../../errors/codes.ts'
import { readSecretFile, replaceSecretFile } from '../../secret-file.ts'
import { parseScryptHash, type ScryptHash } from '../../broker/password.ts'

export const OWNER_FILE = 'console-owner'

export function ownerPath(dataDir: string): string {
  return join(dataDir, OWNER_FILE)
}

export type OwnerRead = Result<{ hash: ScryptHash | null }>

// A damaged file stops the start (hub/files/README.md: Small files): read as "no password" it
// would change who may sign in, and the owner mends it with one command.
const OWNER_FIX =
  'put it back from a backup, or remove it and set the password again with `svc hub console-password`'

/** The stored hash; a missing file is no password (null). Errors name the file and the fix. */
export async function readOwnerFile(file: string): Promise<OwnerRead> {
  const r = await readSecretFile(file, 'the console password hash')
  if (!r.ok) return r
  if (r.text === null) return { ok: true, hash: null }
  const line = r.text.split('\n').find((l) => l.trim() !== '' && !l.startsWith('#'))
  // `--clear` removes the file, so a file without a hash line is one cut short, not "no password".
  if (line === undefined)
    return fail(
      'BAD_CONFIG',
      `${file}: ${r.text.length === 0 ? 'empty (0 bytes)' : 'no password hash in it'}; ${OWNER_FIX}`,
    )
  const parsed = parseScryptHash(line.trim())
  if (!parsed.ok) return { ...parsed, error: `${file}: ${parsed.error}; ${OWNER_FIX}` }
  return { ok: true, hash: parsed.value }
}

/** Replaces the file whole (temp file 0600, synced, renamed): a reader sees old or new. */
export async function writeOwnerFile(file: string, phc: string): Promise<void> {
  await replaceSecretFile(
    file,
    `# svc hub console owner password (scrypt), written by \`svc hub console-password\`. Keep mode 0600.\n${phc}\n`,
  )
}
