// An archive encrypted with a passphrase (`--passphrase-env`): scrypt makes a key from the
// passphrase and a random salt, AES-256-GCM encrypts the gzip stream and its tag follows it.
// Layout: MAGIC, salt (16), IV (12), key check (16), ciphertext, tag (16). The key check (an HMAC
// of a fixed text under the key) tells a wrong passphrase at once; a changed byte fails the tag
// at the end, which restore checks before it puts anything in place.
import {
  createCipheriv,
  createDecipheriv,
  createHmac,
  randomBytes,
  scrypt,
  timingSafeEqual,
} from 'node:crypto'
import { Transform, type TransformCallback } from 'node:stream'

export const MAGIC = Buffer.from('SVCBAK1E')
/** gzip's own first bytes: an archive written without a passphrase. */
export const GZIP_MAGIC = Buffer.from([0x1f, 0x8b])
const SALT = 16
const IV = 12
const TAG = 16
const CHECK = 16
/** What comes before the ciphertext. */
export const HEAD_BYTES = MAGIC.length + SALT + IV + CHECK
const checkOf = (key: Buffer) =>
  createHmac('sha256', key).update('svc hub backup key check').digest().subarray(0, CHECK)
// scrypt's cost: N = 2^15 takes about 0.1 s and 32 MiB here, more on a Pi; once per archive.
const SCRYPT = { N: 1 << 15, r: 8, p: 1, maxmem: 64 * 1024 * 1024 }

function keyFor(passphrase: string, salt: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(passphrase, salt, 32, SCRYPT, (err, key) => (err ? reject(err) : resolve(key))),
  )
}

/** A transform that encrypts what passes through it. */
export async function encryptStream(passphrase: string): Promise<Transform> {
  const salt = randomBytes(SALT)
  const iv = randomBytes(IV)
  const key = await keyFor(passphrase, salt)
  const cipher = createCipheriv('aes-256-gcm', key, iv)
  const head = Buffer.concat([MAGIC, salt, iv, checkOf(key)])
  let started = false
  return new Transform({
    transform(chunk: Buffer, _enc, cb: TransformCallback) {
      if (!started) {
        started = true
        this.push(head)
      }
      cb(null, cipher.update(chunk))
    },
    flush(cb: TransformCallback) {
      if (!started) this.push(head)
      this.push(cipher.final())
      cb(null, cipher.getAuthTag())
    },
  })
}

export class WrongPassphraseError extends Error {}

/**
 * A transform that decrypts an archive whose first bytes were already read (`head`, at least
 * HEAD_BYTES). The last TAG bytes are held back until the end, where they are checked.
 */
export async function decryptStream(passphrase: string, head: Buffer): Promise<Transform> {
  const salt = head.subarray(MAGIC.length, MAGIC.length + SALT)
  const iv = head.subarray(MAGIC.length + SALT, MAGIC.length + SALT + IV)
  const key = await keyFor(passphrase, salt)
  const check = head.subarray(MAGIC.length + SALT + IV, HEAD_BYTES)
  if (check.length !== CHECK || !timingSafeEqual(check, checkOf(key)))
    throw new WrongPassphraseError('the passphrase is wrong')
  const decipher = createDecipheriv('aes-256-gcm', key, iv)
  let held = head.subarray(HEAD_BYTES)
  return new Transform({
    transform(chunk: Buffer, _enc, cb: TransformCallback) {
      const all = held.length > 0 ? Buffer.concat([held, chunk]) : chunk
      const cut = Math.max(0, all.length - TAG)
      held = all.subarray(cut)
      cb(null, cut > 0 ? decipher.update(all.subarray(0, cut)) : undefined)
    },
    flush(cb: TransformCallback) {
      if (held.length !== TAG) return cb(new WrongPassphraseError('the archive is cut short'))
      try {
        decipher.setAuthTag(held)
        cb(null, decipher.final())
      } catch {
        cb(new WrongPassphraseError('the passphrase is wrong, or the archive was changed'))
      }
    },
  })
}
