// Applying the five row conditions to every manifest row (marketplace-api: verify). Pure: the
// registry reads come in as values, one per row, in manifest order.
import type { Address, Hex } from 'viem'
import { type ManifestRow, checkValidationRow } from '../../records/index.ts'
import type { ValidationRead } from '../chain/market-chain.ts'

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

export function verifyRows(rows: readonly ManifestRow[], reads: readonly ValidationRead[], agentId: string, attestor: Address): VerifySummary {
  let passed = 0
  const verdicts: RowVerdict[] = rows.map((row, index) => {
    const base = { index, paramsHash: row.paramsHash, requestHash: row.requestHash }
    const r = reads[index]
    if (!r || !r.ok) {
      const why = !r ? 'no registry read' : r.kind === 'unknown' ? 'requestHash: unknown to the validation registry' : `registry read failed: ${r.error}`
      return { ...base, pass: false, reason: why }
    }
    const c = checkValidationRow(r.row, { agentId, attestor, paramsHash: row.paramsHash })
    if (!c.ok) return { ...base, pass: false, reason: `condition ${c.condition}: ${c.error}` }
    passed++
    return { ...base, pass: true }
  })
  return { total: rows.length, passed, failed: rows.length - passed, verdicts }
}
