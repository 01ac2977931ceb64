// The five row conditions (market/API.md, "The row conditions", and
// "Client-side verification of one line", step 4). Pure: the caller reads the row from the registry and passes it in.
import type { Address, Hex } from 'viem'

export const ATTEST_RESPONSE = 100
export const ATTEST_TAG = 'svc-action'

/** getValidationStatus(bytes32) → (validator, agentId, response, responseHash, tag, lastUpdate). */
export interface ValidationRow {
  validator: Address
  agentId: bigint
  response: number
  responseHash: Hex
  tag: string
  lastUpdate: bigint
}

export interface RowExpectation {
  agentId: bigint | string
  attestor: Address
  paramsHash: Hex
}

export type RowCondition = 1 | 2 | 3 | 4 | 5
export type RowCheck = { ok: true } | { ok: false; condition: RowCondition; error: string }

export function checkValidationRow(row: ValidationRow, want: RowExpectation): RowCheck {
  const agent = typeof want.agentId === 'bigint' ? want.agentId : BigInt(want.agentId)
  if (row.agentId !== agent)
    return { ok: false, condition: 1, error: `agent: the row is for agent ${row.agentId}, expected ${agent}` }
  if (row.validator.toLowerCase() !== want.attestor.toLowerCase()) {
    return {
      ok: false,
      condition: 2,
      error: `validator: the row was answered by ${row.validator}, expected the attestor ${want.attestor}`,
    }
  }
  if (row.response !== ATTEST_RESPONSE)
    return { ok: false, condition: 3, error: `response: ${row.response}, expected ${ATTEST_RESPONSE}` }
  if (row.responseHash.toLowerCase() !== want.paramsHash.toLowerCase()) {
    return {
      ok: false,
      condition: 4,
      error: `responseHash: ${row.responseHash} does not equal keccak256 of the line (${want.paramsHash})`,
    }
  }
  // The verify route accepts an empty tag ("when tag is set"); a set tag must be ours.
  if (row.tag !== '' && row.tag !== ATTEST_TAG)
    return { ok: false, condition: 5, error: `tag: "${row.tag}", expected "${ATTEST_TAG}"` }
  return { ok: true }
}
