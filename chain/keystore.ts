// The owner's key for `svc chain enrol` / `deploy-validation`: a Web3 Secret Storage v3 keystore
// (the JSON that geth, ethers, MetaMask exports and foundry's `cast wallet` write) opened with a
// passphrase, or a plain hex key file that only its owner can read (0600). Never an argument:
// argv is visible to every user of the machine (ps) and lands in shell history.
//
// Decryption uses node:crypto (scrypt, pbkdf2, aes-128-ctr), @noble/hashes' scrypt where OpenSSL
// refuses the parameters, and viem's keccak256 for the MAC: all already in the tree, so the
// owner's key meets no new dependency.
import { createCipheriv, createDecipheriv, pbkdf2Sync, randomBytes, randomUUID, scrypt } from 'node:crypto'
import { scryptAsync as nobleScrypt } from '@noble/hashes/scrypt.js'
import { readFile, stat } from 'node:fs/promises'
import { type Hex, bytesToHex, concat, hexToBytes, keccak256 } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { fail, type Result } from '../errors/codes.ts'
import { errorText } from '../errors/text.ts'
import { parsePrivateKey } from './private-key.ts'

export type KeyResult = Result<{ privateKey: Hex }>

// A file that asks for more than this is refused before any memory is spent: 2^20 is 8x what
// geth's "standard" scrypt uses (2^18), so every real keystore fits.
const MAX_SCRYPT_N = 2 ** 20
const MAX_PBKDF2_C = 10_000_000

async function scryptAsync(pass: Buffer, salt: Buffer, dklen: number, n: number, r: number, p: number) {
  const maxmem = 256 * n * r + 128 * r * p + 1024 * 1024
  try {
    return await new Promise<Buffer>((resolve, reject) =>
      scrypt(pass, salt, dklen, { N: n, r, p, maxmem }, (err, key) => (err ? reject(err) : resolve(key))),
    )
  } catch (err) {
    // OpenSSL holds to RFC 7914's N < 2^(16r); keystores with r = 1 (the Web3 Secret Storage
    // spec's own example) break it, and every other wallet opens them.
    if ((err as NodeJS.ErrnoException).code !== 'ERR_CRYPTO_INVALID_SCRYPT_PARAMS') throw err
    return Buffer.from(await nobleScrypt(pass, salt, { N: n, r, p, dkLen: dklen, maxmem }))
  }
}

const hexField = (v: unknown): Buffer | undefined =>
  typeof v === 'string' && /^(0x)?([0-9a-fA-F]{2})*$/.test(v)
    ? Buffer.from(v.replace(/^0x/, ''), 'hex')
    : undefined

/** Decrypts a v3 keystore; every refusal says what is wrong and where. */
export async function decryptKeystore(
  json: string,
  passphrase: string,
  where = 'keystore',
): Promise<KeyResult> {
  let o: Record<string, unknown>
  try {
    o = JSON.parse(json) as Record<string, unknown>
  } catch (err) {
    return fail('BAD_CONFIG', `${where}: not JSON (${errorText(err)})`)
  }
  if (typeof o !== 'object' || o === null) return fail('BAD_CONFIG', `${where}: not a keystore object`)
  if (o.version !== 3) return fail('BAD_CONFIG', `${where}: version must be 3 (Web3 Secret Storage)`)
  // geth and ethers write `crypto`; some older tools wrote `Crypto`.
  const c = (o.crypto ?? o.Crypto) as Record<string, unknown> | undefined
  if (!c || typeof c !== 'object') return fail('BAD_CONFIG', `${where}: no crypto section`)
  if (c.cipher !== 'aes-128-ctr')
    return fail('BAD_CONFIG', `${where}: cipher ${String(c.cipher)} (only aes-128-ctr)`)
  const iv = hexField((c.cipherparams as Record<string, unknown> | undefined)?.iv)
  const ciphertext = hexField(c.ciphertext)
  const mac = hexField(c.mac)
  if (iv?.length !== 16) return fail('BAD_CONFIG', `${where}: cipherparams.iv must be 16 bytes of hex`)
  if (ciphertext?.length !== 32) return fail('BAD_CONFIG', `${where}: ciphertext must be 32 bytes of hex`)
  if (mac?.length !== 32) return fail('BAD_CONFIG', `${where}: mac must be 32 bytes of hex`)
  const kp = (c.kdfparams ?? {}) as Record<string, unknown>
  const salt = hexField(kp.salt)
  const dklen = kp.dklen
  if (!salt) return fail('BAD_CONFIG', `${where}: kdfparams.salt must be hex`)
  if (dklen !== 32) return fail('BAD_CONFIG', `${where}: kdfparams.dklen must be 32`)
  const pass = Buffer.from(passphrase.normalize('NFKC'), 'utf8')
  let derived: Buffer
  if (c.kdf === 'scrypt') {
    const { n, r, p } = kp
    if (!Number.isInteger(n) || !Number.isInteger(r) || !Number.isInteger(p) || (n as number) < 2)
      return fail('BAD_CONFIG', `${where}: kdfparams n, r, p must be integers`)
    if ((n as number) > MAX_SCRYPT_N || (n as number) & ((n as number) - 1))
      return fail('BAD_CONFIG', `${where}: scrypt n must be a power of two up to ${MAX_SCRYPT_N}`)
    if ((r as number) * (p as number) > 64) return fail('BAD_CONFIG', `${where}: scrypt r*p above 64`)
    derived = await scryptAsync(pass, salt, 32, n as number, r as number, p as number)
  } else if (c.kdf === 'pbkdf2') {
    if (kp.prf !== 'hmac-sha256') return fail('BAD_CONFIG', `${where}: pbkdf2 prf must be hmac-sha256`)
    const cnt = kp.c
    if (!Number.isInteger(cnt) || (cnt as number) < 1 || (cnt as number) > MAX_PBKDF2_C)
      return fail('BAD_CONFIG', `${where}: pbkdf2 c must be an integer up to ${MAX_PBKDF2_C}`)
    derived = pbkdf2Sync(pass, salt, cnt as number, 32, 'sha256')
  } else return fail('BAD_CONFIG', `${where}: kdf ${String(c.kdf)} (only scrypt or pbkdf2)`)
  // Web3 Secret Storage v3: mac = keccak256(derivedKey[16..32] ‖ ciphertext).
  const want = keccak256(concat([bytesToHex(derived.subarray(16, 32)), bytesToHex(ciphertext)]))
  if (want !== bytesToHex(mac))
    return fail('UNAUTHORIZED', `${where}: wrong passphrase (the MAC does not match)`)
  const d = createDecipheriv('aes-128-ctr', derived.subarray(0, 16), iv)
  const key = bytesToHex(Buffer.concat([d.update(ciphertext), d.final()]))
  const parsed = parsePrivateKey(key, `${where}: the decrypted key`)
  if (!parsed.ok) return fail(parsed.code, parsed.error)
  const address = parsed.address
  if (
    typeof o.address === 'string' &&
    o.address.replace(/^0x/, '').toLowerCase() !== address.slice(2).toLowerCase()
  )
    return fail(
      'BAD_CONFIG',
      `${where}: the key is for ${address}, but the file says 0x${o.address.replace(/^0x/, '')}`,
    )
  return { ok: true, privateKey: key }
}

/**
 * Writes a v3 keystore (scrypt). svc never stores the owner's key itself; tests and owners who
 * want to turn a raw key into a keystore use this.
 */
export async function encryptKeystore(privateKey: Hex, passphrase: string, n = 2 ** 18): Promise<string> {
  const salt = randomBytes(32)
  const iv = randomBytes(16)
  const derived = await scryptAsync(Buffer.from(passphrase.normalize('NFKC'), 'utf8'), salt, 32, n, 8, 1)
  const ci = createCipheriv('aes-128-ctr', derived.subarray(0, 16), iv)
  const ciphertext = Buffer.concat([ci.update(hexToBytes(privateKey)), ci.final()])
  const mac = keccak256(concat([bytesToHex(derived.subarray(16, 32)), bytesToHex(ciphertext)]))
  return JSON.stringify({
    version: 3,
    id: randomUUID(),
    address: privateKeyToAccount(privateKey).address.slice(2).toLowerCase(),
    crypto: {
      cipher: 'aes-128-ctr',
      cipherparams: { iv: iv.toString('hex') },
      ciphertext: ciphertext.toString('hex'),
      kdf: 'scrypt',
      kdfparams: { dklen: 32, n, r: 8, p: 1, salt: salt.toString('hex') },
      mac: mac.slice(2),
    },
  })
}

/** A key file the owner named that is not there, or one that could not be read. */
const readFailure = (err: unknown) =>
  (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'NOT_FOUND' : 'IO_FAILED'

/** A hex key in a file only its owner may read (like ssh's private keys). */
export async function readKeyFile(path: string): Promise<KeyResult> {
  let text: string
  try {
    const st = await stat(path)
    if (process.platform !== 'win32' && (st.mode & 0o077) !== 0)
      return fail(
        'BAD_CONFIG',
        `key file ${path}: readable by others (mode ${(st.mode & 0o777).toString(8)}); chmod 600 ${path}`,
      )
    text = await readFile(path, 'utf8')
  } catch (err) {
    return fail(readFailure(err), `key file ${path}: ${errorText(err)}`)
  }
  const r = parsePrivateKey(text, `key file ${path}`)
  return r.ok ? { ok: true, privateKey: r.key } : fail(r.code, r.error)
}

/** Reads and decrypts a keystore file. */
export async function readKeystoreFile(path: string, passphrase: string): Promise<KeyResult> {
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (err) {
    return fail(readFailure(err), `keystore ${path}: ${errorText(err)}`)
  }
  return decryptKeystore(text, passphrase, `keystore ${path}`)
}
