// Applying the five row conditions to every manifest row (market/API.md, "The row conditions"). Pure: the
// registry reads come in as values, one per row, in manifest order.
import type { Address, Hex } from 'viem'
import { type ManifestRow, checkValidationRow } from '../../records/index.ts'
import type { ValidationRead } from '../chain/validation-read.ts'

export interface RowVerdict {
  index: number
  paramsHash: Hex
  requestHash: Hex
  pass: boolean
  /** Why the row failed: which condition and the values seen. Absent when it passed. */
  reason?: string
}

export interface VerifySummary {
  total: number
  passed: number
  failed: number
  verdicts: RowVerdict[]
}

export function verifyRows(
  rows: readonly ManifestRow[],
  reads: readonly ValidationRead[],
  agentId: string,
  attestor: Address,
): VerifySummary {
  let passed = 0
  // Parsed once, not per row (5,000 BigInt parses showed in the verify profile); lazily, so a
  // listing whose every read failed still answers its rows rather than throwing here.
  let agent: bigint | undefined
  const verdicts: RowVerdict[] = rows.map((row, index) => {
    const r = reads[index]
    if (!r?.ok) {
      const why = !r
        ? 'no registry read'
        : r.code === 'NOT_FOUND'
          ? 'requestHash: unknown to the validation registry'
          : `registry read failed: ${r.error}`
      return { index, paramsHash: row.paramsHash, requestHash: row.requestHash, pass: false, reason: why }
    }
    agent ??= BigInt(agentId)
    const c = checkValidationRow(r.row, { agentId: agent, attestor, paramsHash: row.paramsHash })
    if (!c.ok)
      return {
        index,
        paramsHash: row.paramsHash,
        requestHash: row.requestHash,
        pass: false,
        reason: `condition ${c.condition}: ${c.error}`,
      }
    passed++
    return { index, paramsHash: row.paramsHash, requestHash: row.requestHash, pass: true }
  })
  return { total: rows.length, passed, failed: rows.length - passed, verdicts }
}
