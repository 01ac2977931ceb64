// The batch reader's wire format, both ways, by hand. Pure. Measured on 5,000 rows: viem's
// generic encode/decode of the reader's call and answer (hex → bytes → ABI cursor per row) took
// most of verify's time; here the call is string concatenation and the answer one hex → Buffer
// conversion read at fixed offsets.
//
// Call: read(address registry, bytes32[] hashes), standard ABI.
// Answer: ABI `bytes` (offset 0x20, length, data); the data is one record per hash, in order:
//   0x01 validator(20) agentId(32) response(1) responseHash(32) lastUpdate(32) tagLength(2) tag
//   0x00 length(2) revertData
//   0x02          (the registry answered data not shaped like getValidationStatus's return)
// (contracts/ValidationBatchReader.sol writes it.)
import { type Address, type Hex, checksumAddress, toFunctionSelector } from 'viem'
import type { Failure } from '../../errors/codes.ts'
import { batchReaderAbi } from './batch-reader.generated.ts'
import type { ValidationRead } from './validation-read.ts'

export const OK = 1
export const REVERTED = 0
export const MISSHAPEN = 2
/** Bytes of an OK record before its tag. */
export const OK_HEAD = 120

const READ_SELECTOR = toFunctionSelector(batchReaderAbi[0])
/** Error(string): the selector of a Solidity `require`/`revert` reason. */
const ERROR_SELECTOR = 0x08c379a0
const ADDRESS = /^0x[0-9a-fA-F]{40}$/

/** A registry or hash that is not what it must be: the caller's input. */
export type Encoded = { ok: true; data: Hex } | Failure<'BAD_INPUT'>
/** An answer that cannot be read: the reader (or the RPC) sent what it must not. */
export type Decoded = { ok: true; reads: ValidationRead[] } | Failure<'UPSTREAM_FAILED'>

const word = (n: number): string => n.toString(16).padStart(64, '0')

export function encodeReadCall(registry: Address, hashes: readonly Hex[]): Encoded {
  if (!ADDRESS.test(registry))
    return { ok: false, code: 'BAD_INPUT', error: `registry ${registry} is not an address` }
  let body = ''
  for (const h of hashes) {
    if (h.length !== 66 || !h.startsWith('0x'))
      return { ok: false, code: 'BAD_INPUT', error: `request hash ${h} is not 32 bytes of hex` }
    body += h.slice(2)
  }
  // One hex check for all hashes (a regex per hash cost more than the rest of the encoding).
  if (Buffer.from(body, 'hex').length !== 32 * hashes.length)
    return { ok: false, code: 'BAD_INPUT', error: 'a request hash is not hex' }
  return {
    ok: true,
    data: `${READ_SELECTOR}${registry.slice(2).toLowerCase().padStart(64, '0')}${word(0x40)}${word(hashes.length)}${body}`,
  }
}

/** A big-endian word that must fit a JS integer (offsets, lengths); null when it does not. */
function smallWord(buf: Buffer, at: number): number | null {
  for (let i = at; i < at + 26; i++) if (buf[i] !== 0) return null
  return buf.readUIntBE(at + 26, 6)
}

/** A uint256 word; the usual small values (ids, timestamps) skip the hex round trip. */
function uint256(buf: Buffer, at: number): bigint {
  for (let i = at; i < at + 24; i++) if (buf[i] !== 0) return BigInt(`0x${buf.toString('hex', at, at + 32)}`)
  return buf.readBigUInt64BE(at + 24)
}

/** The reason of an Error(string) revert, as viem's decodeErrorResult reads it; null for anything else. */
function revertReason(buf: Buffer, start: number, end: number): string | null {
  if (end - start < 4 + 64 || buf.readUInt32BE(start) !== ERROR_SELECTOR) return null
  const head = start + 4
  const at = smallWord(buf, head)
  if (at === null || head + at + 32 > end) return null
  const length = smallWord(buf, head + at)
  const from = head + at + 32
  if (length === null || from + length > end) return null
  return buf.toString('utf8', from, from + length)
}

function hexToBuffer(data: string): Buffer | null {
  if (!data.startsWith('0x') || data.length % 2 !== 0) return null
  const buf = Buffer.from(data.slice(2), 'hex')
  // Buffer.from stops quietly at the first character that is not hex.
  return buf.length * 2 === data.length - 2 ? buf : null
}

/** Exactly `count` reads, in order, or why the answer cannot be read. */
export function decodeReadResult(data: string, count: number): Decoded {
  const fail = (why: string): Decoded => ({
    ok: false,
    code: 'UPSTREAM_FAILED',
    error: `the batch reader answered malformed data: ${why}`,
  })
  const buf = hexToBuffer(data)
  if (!buf) return fail('not hex')
  if (buf.length < 64) return fail(`${buf.length} bytes, shorter than the 64-byte header`)
  if (smallWord(buf, 0) !== 32) return fail('the bytes offset is not 0x20')
  const length = smallWord(buf, 32)
  if (length === null || length > buf.length - 64)
    return fail(`the length ${length ?? 'word'} runs past the ${buf.length - 64} bytes that follow`)
  const end = 64 + length
  const reads: ValidationRead[] = new Array(count)
  // A listing's rows nearly all name one validator: checksum each address once per answer.
  const checksummed = new Map<string, Address>()
  let at = 64
  for (let i = 0; i < count; i++) {
    if (at >= end) return fail(`${i} records for ${count} hashes`)
    const kind = buf[at]
    if (kind === OK) {
      if (at + OK_HEAD > end) return fail(`record ${i} is cut short`)
      const tagEnd = at + OK_HEAD + buf.readUInt16BE(at + 118)
      if (tagEnd > end) return fail(`record ${i}'s tag is cut short`)
      const raw = buf.toString('hex', at + 1, at + 21)
      let validator = checksummed.get(raw)
      if (validator === undefined) {
        validator = checksumAddress(`0x${raw}`)
        checksummed.set(raw, validator)
      }
      reads[i] = {
        ok: true,
        row: {
          validator,
          agentId: uint256(buf, at + 21),
          response: buf[at + 53]!,
          responseHash: `0x${buf.toString('hex', at + 54, at + 86)}`,
          tag: buf.toString('utf8', at + OK_HEAD, tagEnd),
          lastUpdate: uint256(buf, at + 86),
        },
      }
      at = tagEnd
    } else if (kind === REVERTED) {
      if (at + 3 > end) return fail(`record ${i} is cut short`)
      const dataEnd = at + 3 + buf.readUInt16BE(at + 1)
      if (dataEnd > end) return fail(`record ${i}'s revert data is cut short`)
      const reason = revertReason(buf, at + 3, dataEnd)
      reads[i] =
        reason === 'unknown'
          ? { ok: false, code: 'NOT_FOUND', kind: 'unknown', error: 'unknown request hash' }
          : {
              ok: false,
              code: 'CHAIN_REVERTED',
              kind: 'reverted',
              error: reason ?? 'reverted without a reason',
            }
      at = dataEnd
    } else if (kind === MISSHAPEN) {
      reads[i] = {
        ok: false,
        code: 'CHAIN_REVERTED',
        kind: 'reverted',
        error: 'the registry answered data that does not decode',
      }
      at += 1
    } else {
      return fail(`record ${i} has kind ${kind}`)
    }
  }
  if (at !== end) return fail(`${end - at} bytes after the last of ${count} records`)
  return { ok: true, reads }
}
