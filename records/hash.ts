// DESIGN: a data line is hashed as its exact UTF-8 bytes without the trailing newline.
// paramsHash = keccak256(line bytes) (marketplace-api: Manifest, rows[].paramsHash).
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

/** A 0x-prefixed 32-byte hex string (<hash> in marketplace-api; any case accepted). */
export function isHash(v: unknown): v is Hex {
  return typeof v === 'string' && /^0x[0-9a-fA-F]{64}$/.test(v)
}
