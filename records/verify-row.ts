// The five row conditions (market/API.md, "The row conditions", and
// "Client-side verification of one line", step 4). Pure: the caller reads the row from the registry and passes it in.
import type { Address, Hex } from 'viem'
import { type Failure, fail } from '../errors/codes.ts'

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
/**
 * A row that fails a condition: the line as given is not attested as it claims, a refusal of what
 * the caller brought (BAD_INPUT); `condition` says which of the five.
 */
export type RowCheck = { ok: true } | (Failure<'BAD_INPUT'> & { condition: RowCondition })

const failed = (condition: RowCondition, error: string): RowCheck => ({
  ...fail('BAD_INPUT', error),
  condition,
})

export function checkValidationRow(row: ValidationRow, want: RowExpectation): RowCheck {
  const agent = typeof want.agentId === 'bigint' ? want.agentId : BigInt(want.agentId)
  if (row.agentId !== agent) return failed(1, `agent: the row is for agent ${row.agentId}, expected ${agent}`)
  if (row.validator.toLowerCase() !== want.attestor.toLowerCase())
    return failed(
      2,
      `validator: the row was answered by ${row.validator}, expected the attestor ${want.attestor}`,
    )
  if (row.response !== ATTEST_RESPONSE)
    return failed(3, `response: ${row.response}, expected ${ATTEST_RESPONSE}`)
  if (row.responseHash.toLowerCase() !== want.paramsHash.toLowerCase())
    return failed(
      4,
      `responseHash: ${row.responseHash} does not equal keccak256 of the line (${want.paramsHash})`,
    )
  // The verify route accepts an empty tag ("when tag is set"); a set tag must be ours.
  if (row.tag !== '' && row.tag !== ATTEST_TAG)
    return failed(5, `tag: "${row.tag}", expected "${ATTEST_TAG}"`)
  return { ok: true }
}
