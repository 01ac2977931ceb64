// Broker account passwords: scrypt (RFC 7914) from node:crypto, each hash a PHC string that
// carries its own parameters and salt (`$scrypt$ln=14,r=8,p=1$<salt>$<hash>`, base64 without
// padding), so the cost can be raised later without breaking the hashes already stored.
import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto'
import { fail, type Result } from '../../errors/codes.ts'

/**
 * N = 2^14, r = 8, p = 1: libsodium's "interactive" scrypt limits (16 MiB, tens of ms here), a
 * cost a Raspberry-Pi-class hub can pay at each board's connect.
 */
export const SCRYPT_DEFAULTS = { ln: 14, r: 8, p: 1 } as const
const SALT_BYTES = 16
const KEY_BYTES = 32

export const PASSWORD_MIN = 12
export const PASSWORD_MAX_BYTES = 1024

export interface ScryptHash {
  ln: number
  r: number
  p: number
  salt: Buffer
  hash: Buffer
}

// Bounds on what a stored hash may ask for: a hand-edited file must not make one connect take
// gigabytes of memory (128 · 2^ln · r bytes) or minutes.
const MAX_MEMORY = 256 * 1024 * 1024
const B64 = /^[A-Za-z0-9+/]+$/

// A stored hash is read from a secret file the operator keeps (the broker accounts, the console
// owner's password): one that does not parse is BAD_CONFIG.
export type Parsed<T> = Result<{ value: T }>

export function parseScryptHash(text: string): Parsed<ScryptHash> {
  const m = /^\$scrypt\$ln=(\d{1,2}),r=(\d{1,2}),p=(\d{1,2})\$([^$]+)\$([^$]+)$/.exec(text)
  if (!m) return fail('BAD_CONFIG', 'not a $scrypt$ln=…,r=…,p=…$salt$hash string')
  const [ln, r, p] = [Number(m[1]), Number(m[2]), Number(m[3])]
  if (ln < 10 || ln > 20 || r < 1 || r > 32 || p < 1 || p > 16)
    return fail(
      'BAD_CONFIG',
      `scrypt parameters out of range (ln 10–20, r 1–32, p 1–16): ln=${ln},r=${r},p=${p}`,
    )
  if (128 * 2 ** ln * r > MAX_MEMORY)
    return fail('BAD_CONFIG', `scrypt ln=${ln},r=${r} needs more than 256 MiB`)
  if (!B64.test(m[4] as string) || !B64.test(m[5] as string))
    return fail('BAD_CONFIG', 'salt and hash must be base64 (no padding)')
  const salt = Buffer.from(m[4] as string, 'base64')
  const hash = Buffer.from(m[5] as string, 'base64')
  if (salt.length < 16) return fail('BAD_CONFIG', 'salt shorter than 16 bytes')
  if (hash.length < 32 || hash.length > 64) return fail('BAD_CONFIG', 'hash must be 32 to 64 bytes')
  return { ok: true, value: { ln, r, p, salt, hash } }
}

const b64 = (b: Buffer): string => b.toString('base64').replace(/=+$/, '')

function derive(password: Buffer, s: Omit<ScryptHash, 'hash'>, keyLen: number): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(
      password,
      s.salt,
      keyLen,
      { N: 2 ** s.ln, r: s.r, p: s.p, maxmem: 128 * 2 ** s.ln * s.r + 2 * 1024 * 1024 },
      (err, key) => (err ? reject(err) : resolve(key)),
    ),
  )
}

export async function hashPassword(password: string, params = SCRYPT_DEFAULTS): Promise<string> {
  const salt = randomBytes(SALT_BYTES)
  const hash = await derive(Buffer.from(password, 'utf8'), { ...params, salt }, KEY_BYTES)
  return `$scrypt$ln=${params.ln},r=${params.r},p=${params.p}$${b64(salt)}$${b64(hash)}`
}

/** Does `password` match the stored hash? Constant-time on the derived key. */
export async function verifyPassword(password: Buffer, stored: ScryptHash): Promise<boolean> {
  const key = await derive(password, stored, stored.hash.length)
  return timingSafeEqual(key, stored.hash)
}

/** A password `svc hub user add` accepts, or why not. */
export function passwordError(password: string): string | null {
  if (password.length === 0) return 'the password is empty'
  if ([...password].length < PASSWORD_MIN) return `the password is shorter than ${PASSWORD_MIN} characters`
  if (Buffer.byteLength(password, 'utf8') > PASSWORD_MAX_BYTES)
    return `the password is longer than ${PASSWORD_MAX_BYTES} bytes`
  // A control character is almost always a pasted newline or a stray escape, not intent.
  if ([...password].some((c) => (c.codePointAt(0) as number) < 0x20 || c === '\x7f'))
    return 'the password contains a control character (a newline?)'
  return null
}
