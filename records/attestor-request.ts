// The attestor's wire contract: the attest request body and its checks (pure), shared by the
// market's attestor (which parses it) and the hub's sync (which sends it). The device sends its
// lines in batches:
//   POST /api/attestor/attest  { agentId: "0", items: [{ requestHash, line, signature }, …] }
import { type Hex, isHex } from 'viem'
import { type Failure, fail } from '../errors/codes.ts'
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

export type ItemSuccess = { requestHash: Hex; ok: true; txHash: Hex | null; already: boolean }

export type ItemFailure = { requestHash: Hex } & Failure

/** One line's outcome in the attestor: a refusal carries the code of what went wrong. */
export type ItemResult = ItemSuccess | ItemFailure

/**
 * One line's outcome as `POST /api/attestor/attest` answers it: a refusal is the requestHash, ok
 * and its message, the body chain/README.md, "The attestor: svc attestor" documents, so its code
 * stays with the attestor (the hub keeps and logs the message, and branches on nothing in it).
 */
export type ItemAnswer = ItemSuccess | Omit<ItemFailure, 'code'>

export function itemAnswer(r: ItemResult): ItemAnswer {
  if (r.ok) return r
  const { code: _, ...answer } = r
  return answer
}

/** A body is the caller's input: every refusal is BAD_INPUT (a 400 that names the field). */
export type Parsed<T> = { ok: true; value: T } | Failure<'BAD_INPUT'>

/** Every error names the field: `items[2].signature: …`. */
export function parseAttestRequest(raw: unknown): Parsed<AttestRequest> {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    return fail('BAD_INPUT', 'body: expected a JSON object')
  const b = raw as Record<string, unknown>
  if (typeof b.agentId !== 'string' || !/^(0|[1-9][0-9]{0,77})$/.test(b.agentId))
    return fail('BAD_INPUT', 'agentId: must be a decimal string')
  if (!Array.isArray(b.items) || b.items.length === 0)
    return fail('BAD_INPUT', 'items: must be a non-empty array')
  if (b.items.length > MAX_ITEMS) return fail('BAD_INPUT', `items: at most ${MAX_ITEMS} per request`)
  const items: AttestItem[] = []
  const seen = new Set<string>()
  for (let i = 0; i < b.items.length; i++) {
    const it = b.items[i] as Record<string, unknown> | null
    if (typeof it !== 'object' || it === null || Array.isArray(it))
      return fail('BAD_INPUT', `items[${i}]: expected an object`)
    if (!isHash(it.requestHash))
      return fail('BAD_INPUT', `items[${i}].requestHash: must be a 0x-prefixed 32-byte hex hash`)
    if (typeof it.line !== 'string' || it.line.length === 0)
      return fail('BAD_INPUT', `items[${i}].line: must be a non-empty string`)
    if (it.line.length > MAX_LINE_CHARS)
      return fail('BAD_INPUT', `items[${i}].line: longer than ${MAX_LINE_CHARS} characters`)
    if (it.line.includes('\n')) return fail('BAD_INPUT', `items[${i}].line: must not contain a newline`)
    if (typeof it.signature !== 'string' || !isHex(it.signature) || it.signature.length !== 132) {
      return fail('BAD_INPUT', `items[${i}].signature: must be a 65-byte 0x-prefixed hex signature`)
    }
    const key = it.requestHash.toLowerCase()
    if (seen.has(key)) return fail('BAD_INPUT', `items[${i}].requestHash: repeated in the same request`)
    seen.add(key)
    items.push({ requestHash: it.requestHash, line: it.line, signature: it.signature })
  }
  return { ok: true, value: { agentId: BigInt(b.agentId), items } }
}
