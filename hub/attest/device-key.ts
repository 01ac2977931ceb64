// The device's secp256k1 key: created on first start (mode 0600, never overwritten), read on
// every later start. It signs each attested line (EIP-191 personal message over the line's
// UTF-8 bytes, so any wallet tool can check it) and sends the device's validation requests.
// A damaged key stops the start and is never replaced: a new key is a different device on chain
// (hub/files/README.md: Small files).
import { chmod, readFile, stat } from 'node:fs/promises'
import { type Address, type Hex, type LocalAccount, hexToBytes } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { parsePrivateKey } from '../../chain/private-key.ts'
import { personalMessageDigest } from '../../records/hash.ts'
import { writeFileAtomic } from '../../files/atomic-file.ts'
import { DamagedFileError } from '../files/damaged-file.ts'
import { loadNativeSecp256k1 } from './native-secp256k1.ts'

/** Which implementation signs lines: libsecp256k1 when its binary loads, else viem's pure JS. */
export type SignerBackend = 'libsecp256k1' | 'noble'

export interface DeviceSigner {
  address: Address
  /** viem account: signs the device's validationRequest transactions. */
  account: LocalAccount
  backend: SignerBackend
  /** EIP-191 personal-message signature over the line's exact UTF-8 bytes. */
  signLine(line: string): Promise<Hex>
}

/** The fastest backend this machine can load. */
export function bestSignerBackend(): SignerBackend {
  return loadNativeSecp256k1().ok ? 'libsecp256k1' : 'noble'
}

export function signerFromKey(privateKey: Hex, backend: SignerBackend = bestSignerBackend()): DeviceSigner {
  const account = privateKeyToAccount(privateKey)
  const native = backend === 'libsecp256k1' ? loadNativeSecp256k1() : undefined
  if (native && !native.ok) throw new Error(`libsecp256k1 is not available here: ${native.error}`)
  let signLine: DeviceSigner['signLine'] = (line) => account.signMessage({ message: line })
  if (native?.ok) {
    const key = hexToBytes(privateKey)
    // Both backends are RFC 6979 deterministic and low-s, so the bytes are identical (tested).
    signLine = async (line) => {
      const { signature, recid } = native.lib.ecdsaSign(personalMessageDigest(line), key)
      return `0x${Buffer.from(signature.buffer, signature.byteOffset, 64).toString('hex')}${(27 + recid).toString(16)}`
    }
  }
  return { address: account.address, account, backend, signLine }
}

/** What the owner of a damaged device key does: the key is the device, so only a copy of it will do. */
export const DEVICE_KEY_FIX =
  "it is this device's identity on chain and the hub never makes a new one over it: put it back from a backup (`svc hub restore FILE` into an empty home, or a copy of the file); only if this device was never enrolled on chain, move the file away and the hub makes a new key, a new device"

function parseKey(text: string, path: string): Hex {
  // 0 bytes: a power cut during its first write (before writes were atomic) or a failing card;
  // the hub cannot tell which, nor whether the key was in use, so it refuses as for any damage.
  if (text.length === 0) throw new DamagedFileError('device key', path, 'empty (0 bytes)', DEVICE_KEY_FIX)
  const r = parsePrivateKey(text, `device key ${path}`)
  if (!r.ok) throw new DamagedFileError('device key', path, r.problem, DEVICE_KEY_FIX)
  return r.key
}

/** The key at `path`, or null when there is none; a damaged one throws DamagedFileError. */
export async function readDeviceKey(path: string): Promise<Hex | null> {
  try {
    return parseKey(await readFile(path, 'utf8'), path)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw err
  }
}

/** Writes a new key, never over another: EEXIST when one is there (another process made it first). */
export async function writeNewDeviceKey(path: string, key: Hex): Promise<void> {
  await writeFileAtomic(path, `${key}\n`, { mode: 0o600, exclusive: true })
}

/** Reads the key at `path`, or creates it (mode 0600) when there is none. */
export async function loadOrCreateDeviceKey(path: string): Promise<DeviceSigner> {
  let key = await readDeviceKey(path)
  if (key === null) {
    const fresh = generatePrivateKey()
    try {
      // Exclusive: two processes starting at once must not each write a different key.
      await writeNewDeviceKey(path, fresh)
      key = fresh
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
      key = parseKey(await readFile(path, 'utf8'), path)
    }
  }
  // A key readable by others is a key shared with them: tighten it rather than refuse to start.
  const st = await stat(path)
  if ((st.mode & 0o077) !== 0) await chmod(path, 0o600)
  return signerFromKey(key)
}
