// Client-side verification of one line (market/API.md, "Client-side verification of one
// line"): 1. hash line n of the data file; 2. take line n of the request list; 3. read the
// validation record; 4. accept only when the five row conditions hold. (Step 5 of the seed is
// the consequence: one changed character changes the hash, and condition 4 fails.)
import type { Address, Hex } from 'viem'
import { type Failure, fail, failAt } from '../../errors/codes.ts'
import type { SvcPublicClient } from '../../chain/clients.ts'
import { readValidationStatus } from '../../chain/reads.ts'
import { splitLines } from '../../records/data-lines.ts'
import { isHash, lineHash } from '../../records/hash.ts'
import { type RowCondition, type ValidationRow, checkValidationRow } from '../../records/verify-row.ts'

export interface VerifyLineInput {
  dataText: string
  requestsText: string
  /** 1-based line number. */
  line: number
  agentId: string
  attestor: Address
  validationRegistry: Address
  client: SvcPublicClient
}

export type VerifyLineResult =
  | { ok: true; paramsHash: Hex; requestHash: Hex; row: ValidationRow }
  /**
   * `BAD_INPUT`: the line number, the files or the row's conditions do not hold; `CONFLICT`: the line
   * is not attested yet; at step 3 the registry read's own code (`NOT_FOUND`, `UNREACHABLE`, `CHAIN_REVERTED`).
   */
  | (Failure & {
      step: 1 | 2 | 3 | 4
      condition?: RowCondition
      paramsHash?: Hex
      requestHash?: Hex
    })

export async function verifyLine(i: VerifyLineInput): Promise<VerifyLineResult> {
  const data = splitLines(i.dataText)
  const reqs = splitLines(i.requestsText)
  if (!Number.isInteger(i.line) || i.line < 1)
    return { ...fail('BAD_INPUT', `--line must be a whole number from 1 (got ${i.line})`), step: 1 }
  const text = data[i.line - 1]
  if (text === undefined)
    return {
      ...fail('BAD_INPUT', `the data file has ${data.length} lines; there is no line ${i.line}`),
      step: 1,
    }
  const paramsHash = lineHash(text)
  const req = reqs[i.line - 1]?.trim()
  if (req === undefined)
    return {
      ...fail('BAD_INPUT', `the request list has ${reqs.length} lines; there is no line ${i.line}`),
      step: 2,
      paramsHash,
    }
  if (req === '')
    return {
      ...fail('CONFLICT', `request line ${i.line} is blank: the line is not attested yet`),
      step: 2,
      paramsHash,
    }
  if (!isHash(req))
    return {
      ...fail('BAD_INPUT', `request line ${i.line} is not a 0x-prefixed 32-byte hash`),
      step: 2,
      paramsHash,
    }
  const requestHash = req as Hex
  const row = await readValidationStatus(i.client, i.validationRegistry, requestHash)
  if (!row.ok) {
    if (row.kind === 'unknown')
      return {
        ...fail(row.code, `the registry holds no validation under ${requestHash}`),
        step: 3,
        paramsHash,
        requestHash,
      }
    return { ...failAt('could not read the registry: ', row), step: 3, paramsHash, requestHash }
  }
  const check = checkValidationRow(row.value, { agentId: i.agentId, attestor: i.attestor, paramsHash })
  if (!check.ok)
    return {
      ...fail('BAD_INPUT', `condition ${check.condition} failed: ${check.error}`),
      step: 4,
      condition: check.condition,
      paramsHash,
      requestHash,
    }
  return { ok: true, paramsHash, requestHash, row: row.value }
}
