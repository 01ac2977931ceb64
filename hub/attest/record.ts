// One attested line as the store keeps it, and the states it moves through on its way to the
// validation registry:
//   pending   stored and signed, nothing sent yet (offline is fine)
//   sending   the validationRequest transaction is signed and saved (raw bytes, nonce, hash)
//             BEFORE it is broadcast, so a restart re-broadcasts the same bytes, never a new request
//   requested the request is mined; the attestor has not answered yet
//   attested  the attestor's validationResponse is mined: the line is verifiable
//   failed    cannot be attested (e.g. its request hash was taken by another request); kept, never retried
import type { Hex } from 'viem'
import type { SavedTx } from '../../chain/tx-sender.ts'
import type { LineToStore, StoredLine } from '../../tools/attest-ports.ts'

export type AttestState = 'pending' | 'sending' | 'requested' | 'attested' | 'failed'
export const ATTEST_STATES: readonly AttestState[] = ['pending', 'sending', 'requested', 'attested', 'failed']

export interface SentTx {
  hash: Hex
  /** One transaction per line: its bytes. Batched: absent, the bytes are in the send (below). */
  raw?: Hex
  nonce: number
}

/**
 * A batched request transaction with every attempt signed for its nonce (replacements), and the
 * lines it carries; saved before each broadcast, deleted when its outcome is on the lines.
 */
export interface SavedSend extends SavedTx {
  seqs: number[]
}

/** The line chain_attest stored (its ports, tools/attest-ports.ts), and where it is on its way. */
export interface AttestRecord extends LineToStore, StoredLine {
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
