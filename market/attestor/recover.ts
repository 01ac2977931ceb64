// The EIP-191 signer of a line, by libsecp256k1 (the `secp256k1` package's N-API binding, as the
// device signs: hub/attest/native-secp256k1.ts) when its binary loads, else viem's pure JS: the
// same address, several times faster, which is what bounded the attestor's lines per second.
import { createRequire } from 'node:module'
import {
  type Address,
  type Hex,
  getAddress,
  hashMessage,
  hexToBytes,
  keccak256,
  recoverMessageAddress,
} from 'viem'

interface Binding {
  ecdsaRecover(sig: Uint8Array, recid: number, msg32: Uint8Array, compressed: boolean): Uint8Array
}

let binding: Binding | null | undefined

function load(): Binding | null {
  if (binding !== undefined) return binding
  try {
    binding = createRequire(import.meta.url)('secp256k1/bindings') as Binding
  } catch {
    binding = null
  }
  return binding
}

/** Throws on a malformed signature, as viem's recoverMessageAddress does. */
export async function recoverLineSigner(line: string, signature: Hex): Promise<Address> {
  const lib = load()
  const sig = hexToBytes(signature)
  if (!lib || sig.length !== 65) return recoverMessageAddress({ message: line, signature })
  const v = sig[64]!
  const recid = v >= 27 ? v - 27 : v
  if (recid > 1) return recoverMessageAddress({ message: line, signature })
  const pub = lib.ecdsaRecover(sig.subarray(0, 64), recid, hexToBytes(hashMessage(line)), false)
  return getAddress(`0x${keccak256(pub.subarray(1)).slice(-40)}`)
}
