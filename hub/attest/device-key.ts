// The device's secp256k1 key: created on first start (mode 0600, never overwritten), read on
// every later start. It signs each attested line (EIP-191 personal message over the line's
// UTF-8 bytes, so any wallet tool can check it) and sends the device's validation requests.
import { chmod, mkdir, open, readFile, stat } from 'node:fs/promises'
import { dirname } from 'node:path'
import { type Address, type Hex, type LocalAccount, hexToBytes, isHex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { personalMessageDigest } from '../../records/hash.ts'
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

function parseKey(text: string, path: string): Hex {
  const k = text.trim()
  const hex = (k.startsWith('0x') ? k : `0x${k}`) as Hex
  if (!isHex(hex) || hex.length !== 66) throw new Error(`device key ${path}: expected 32 bytes of hex`)
  try {
    privateKeyToAccount(hex)
  } catch {
    throw new Error(`device key ${path}: not a valid secp256k1 key`)
  }
  return hex
}

/** Reads the key at `path`, or creates it (mode 0600) when there is none. */
export async function loadOrCreateDeviceKey(path: string): Promise<DeviceSigner> {
  await mkdir(dirname(path), { recursive: true })
  let key: Hex | undefined
  try {
    key = parseKey(await readFile(path, 'utf8'), path)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
  }
  if (key === undefined) {
    const fresh = generatePrivateKey()
    try {
      // 'wx': two processes starting at once must not each write a different key.
      const fh = await open(path, 'wx', 0o600)
      try {
        await fh.writeFile(`${fresh}\n`)
        await fh.sync()
      } finally {
        await fh.close()
      }
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
