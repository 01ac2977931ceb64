// A data line is hashed as its exact UTF-8 bytes without the trailing newline:
// paramsHash = keccak256(line bytes) (market/API.md, "The manifest", rows[].paramsHash).
import { keccak_256 } from '@noble/hashes/sha3.js'
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js'
import type { Hex } from 'viem'

export function lineHash(line: string): Hex {
  return `0x${bytesToHex(keccak_256(utf8ToBytes(line)))}`
}

export function bytesHash(bytes: Uint8Array): Hex {
  return `0x${bytesToHex(keccak_256(bytes))}`
}

export const HASH_RE = /^0x[0-9a-f]{64}$/

/** A 0x-prefixed 32-byte hex string (<hash> in market/API.md, "Conventions"; any case accepted). */
export function isHash(v: unknown): v is Hex {
  return typeof v === 'string' && /^0x[0-9a-fA-F]{64}$/.test(v)
}

/** EIP-191 personal-message digest of the line's UTF-8 bytes: what the device signs (the same
 *  as viem's hashMessage, at twice its speed, which matters at thousands of lines a second). */
export function personalMessageDigest(line: string): Uint8Array {
  const bytes = utf8ToBytes(line)
  return keccak_256
    .create()
    .update(utf8ToBytes(`\x19Ethereum Signed Message:\n${bytes.length}`))
    .update(bytes)
    .digest()
}
