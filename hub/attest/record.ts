// One attested line as the store keeps it, and the states it moves through on its way to the
// validation registry:
//   pending   stored and signed, nothing sent yet (offline is fine)
//   sending   the validationRequest transaction is signed and saved (raw bytes, nonce, hash)
//             BEFORE it is broadcast, so a restart re-broadcasts the same bytes, never a new request
//   requested the request is mined; the attestor has not answered yet
//   attested  the attestor's validationResponse is mined: the line is verifiable
//   failed    cannot be attested (e.g. its request hash was taken by another request); kept, never retried
import type { Hex } from 'viem'

export type AttestState = 'pending' | 'sending' | 'requested' | 'attested' | 'failed'
export const ATTEST_STATES: readonly AttestState[] = ['pending', 'sending', 'requested', 'attested', 'failed']

export interface SentTx {
  hash: Hex
  raw: Hex
  nonce: number
}

export interface AttestRecord {
  /** 0-based position in the store = line seq+1 of operations.jsonl. */
  seq: number
  idempotencyKey: string
  action: string
  requestUri: string
  line: string
  paramsHash: Hex
  /** EIP-191 signature of the line by the device key. */
  signature: Hex
  signer: Hex
  requestHash: Hex
  createdAt: string
  state: AttestState
  requestTx?: SentTx
  responseTx?: Hex
  error?: string
}

export type AttestCounts = Record<AttestState, number> & { total: number }

export function emptyCounts(): AttestCounts {
  return { total: 0, pending: 0, sending: 0, requested: 0, attested: 0, failed: 0 }
}
