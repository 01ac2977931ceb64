// Test helper: the batch reader's packed answer built by hand (the layout in
// market/chain/batch-reader-codec.ts), so the decoder can be fed exact and broken answers.
import type { Hex } from 'viem'
import type { ValidationRow } from '../../records/verify-row.ts'
import { MISSHAPEN, OK, REVERTED } from '../../market/chain/batch-reader-codec.ts'

const hex = (n: number, bytes: number): string => n.toString(16).padStart(bytes * 2, '0')
const word = (n: bigint | number): string => n.toString(16).padStart(64, '0')

export function okRecord(r: ValidationRow): string {
  const tag = Buffer.from(r.tag, 'utf8').toString('hex')
  return (
    hex(OK, 1) +
    r.validator.slice(2) +
    word(r.agentId) +
    hex(r.response, 1) +
    r.responseHash.slice(2) +
    word(r.lastUpdate) +
    hex(tag.length / 2, 2) +
    tag
  )
}

export function revertedRecord(data: Hex): string {
  return hex(REVERTED, 1) + hex((data.length - 2) / 2, 2) + data.slice(2)
}

export const misshapenRecord = (): string => hex(MISSHAPEN, 1)

/** Records (hex without 0x) as the reader returns them: ABI `bytes`, zero-padded to a word. */
export function answer(records: string[]): Hex {
  const body = records.join('')
  return `0x${word(32)}${word(body.length / 2)}${body}${'0'.repeat((64 - (body.length % 64)) % 64)}`
}
