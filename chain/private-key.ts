// The one reader of a secp256k1 private key written as hex: the device key, an owner's or the
// attestor's key file, $SVC_ATTESTOR_KEY, a keystore's decrypted key. 64 hex digits, `0x`
// optional, surrounding whitespace (a file's newline) ignored. In chain/ because hub/, market/
// and cli/ all read keys and all may import chain/ (README.md, "The import rules").
import { type Address, type Hex, isHex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import type { Failure } from '../errors/codes.ts'

export type PrivateKeyResult =
  | { ok: true; key: Hex; address: Address }
  /** problem: what is wrong; error: the same, after the label naming what and where. */
  | (Failure<'BAD_CONFIG'> & { problem: string })

/**
 * `label` names the key and where it came from (`key file /etc/svc/owner.key`,
 * `$SVC_ATTESTOR_KEY`); a refusal reads `<label>: expected 32 bytes of hex` or
 * `<label>: not a valid secp256k1 key` (zero, or not below the curve's order).
 */
export function parsePrivateKey(text: string, label: string): PrivateKeyResult {
  const k = text.trim()
  const hex = (k.startsWith('0x') ? k : `0x${k}`) as Hex
  // Every key it reads is one the operator put in place: a key file, a keystore, an environment variable.
  const fail = (problem: string): PrivateKeyResult => ({
    ok: false,
    code: 'BAD_CONFIG',
    problem,
    error: `${label}: ${problem}`,
  })
  if (!isHex(hex) || hex.length !== 66) return fail('expected 32 bytes of hex')
  try {
    return { ok: true, key: hex, address: privateKeyToAccount(hex).address }
  } catch {
    return fail('not a valid secp256k1 key')
  }
}
