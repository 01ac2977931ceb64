// The attestor's wire contract: the attest request body and its checks (pure), shared by the
// market's attestor (which parses it) and the hub's sync (which sends it). The device sends its
// lines in batches:
//   POST /api/attestor/attest  { agentId: "0", items: [{ requestHash, line, signature }, …] }
import { type Hex, isHex } from 'viem'
import { isHash } from './hash.ts'

export const ATTEST_PATH = '/api/attestor/attest'
export const INFO_PATH = '/api/attestor/info'
export const MAX_ITEMS = 100
export const MAX_LINE_CHARS = 64 * 1024

export interface AttestItem {
  requestHash: Hex
  line: string
  signature: Hex
}

export interface AttestRequest {
  agentId: bigint
  items: AttestItem[]
}

export type ItemResult =
  | { requestHash: Hex; ok: true; txHash: Hex | null; already: boolean }
  | { requestHash: Hex; ok: false; error: string }

export type Parsed<T> = { ok: true; value: T } | { ok: false; error: string }

/** Every error names the field: `items[2].signature: …`. */
export function parseAttestRequest(raw: unknown): Parsed<AttestRequest> {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    return { ok: false, error: 'body: expected a JSON object' }
  const b = raw as Record<string, unknown>
  if (typeof b.agentId !== 'string' || !/^(0|[1-9][0-9]{0,77})$/.test(b.agentId))
    return { ok: false, error: 'agentId: must be a decimal string' }
  if (!Array.isArray(b.items) || b.items.length === 0)
    return { ok: false, error: 'items: must be a non-empty array' }
  if (b.items.length > MAX_ITEMS) return { ok: false, error: `items: at most ${MAX_ITEMS} per request` }
  const items: AttestItem[] = []
  const seen = new Set<string>()
  for (let i = 0; i < b.items.length; i++) {
    const it = b.items[i] as Record<string, unknown> | null
    if (typeof it !== 'object' || it === null || Array.isArray(it))
      return { ok: false, error: `items[${i}]: expected an object` }
    if (!isHash(it.requestHash))
      return { ok: false, error: `items[${i}].requestHash: must be a 0x-prefixed 32-byte hex hash` }
    if (typeof it.line !== 'string' || it.line.length === 0)
      return { ok: false, error: `items[${i}].line: must be a non-empty string` }
    if (it.line.length > MAX_LINE_CHARS)
      return { ok: false, error: `items[${i}].line: longer than ${MAX_LINE_CHARS} characters` }
    if (it.line.includes('\n')) return { ok: false, error: `items[${i}].line: must not contain a newline` }
    if (typeof it.signature !== 'string' || !isHex(it.signature) || it.signature.length !== 132) {
      return { ok: false, error: `items[${i}].signature: must be a 65-byte 0x-prefixed hex signature` }
    }
    const key = it.requestHash.toLowerCase()
    if (seen.has(key)) return { ok: false, error: `items[${i}].requestHash: repeated in the same request` }
    seen.add(key)
    items.push({ requestHash: it.requestHash, line: it.line, signature: it.signature })
  }
  return { ok: true, value: { agentId: BigInt(b.agentId), items } }
}
