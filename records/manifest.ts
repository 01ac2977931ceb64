// The listing manifest (market/API.md, "The manifest") and its pure checks, shared by the hub
// (which builds it) and the market (which checks what a device uploads).
import type { Hex } from 'viem'
import { type Failure, fail } from '../errors/codes.ts'
import { splitLines } from './data-lines.ts'
import { isHash, lineHash } from './hash.ts'
import { CHAIN_ID } from '../chain/chain-id.ts'

export const MANIFEST_VERSION = 1
/** market/API.md, "Limits": manifest rows. */
export const MAX_MANIFEST_ROWS = 5000

export interface ManifestRow {
  paramsHash: Hex
  requestHash: Hex
}

export interface Manifest {
  version: 1
  chainId: typeof CHAIN_ID
  agentId: string
  rows: ManifestRow[]
}

/** An uploaded manifest is the device's input: every refusal is BAD_INPUT. */
export type Checked<T> = { ok: true; value: T } | Failure<'BAD_INPUT'>

/** Shape check of an uploaded manifest; the error names the field (`rows[3].paramsHash: …`). */
export function checkManifest(raw: unknown): Checked<Manifest> {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    return fail('BAD_INPUT', 'manifest: expected a JSON object')
  const m = raw as Record<string, unknown>
  if (m.version !== MANIFEST_VERSION) return fail('BAD_INPUT', 'version: must be 1')
  if (m.chainId !== CHAIN_ID) return fail('BAD_INPUT', `chainId: must be ${CHAIN_ID}`)
  if (typeof m.agentId !== 'string' || !/^(0|[1-9][0-9]{0,77})$/.test(m.agentId))
    return fail('BAD_INPUT', 'agentId: must be a decimal string')
  if (!Array.isArray(m.rows)) return fail('BAD_INPUT', 'rows: must be an array')
  if (m.rows.length > MAX_MANIFEST_ROWS)
    return fail('BAD_INPUT', `rows: at most ${MAX_MANIFEST_ROWS} items (got ${m.rows.length})`)
  const rows: ManifestRow[] = []
  for (let i = 0; i < m.rows.length; i++) {
    const r = m.rows[i] as Record<string, unknown> | null
    if (typeof r !== 'object' || r === null || Array.isArray(r))
      return fail('BAD_INPUT', `rows[${i}]: expected an object`)
    if (!isHash(r.paramsHash))
      return fail('BAD_INPUT', `rows[${i}].paramsHash: must be a 0x-prefixed 32-byte hex hash`)
    if (!isHash(r.requestHash))
      return fail('BAD_INPUT', `rows[${i}].requestHash: must be a 0x-prefixed 32-byte hex hash`)
    rows.push({ paramsHash: r.paramsHash, requestHash: r.requestHash })
  }
  return { ok: true, value: { version: 1, chainId: CHAIN_ID, agentId: m.agentId, rows } }
}

/**
 * Row i must describe data line i: same count, paramsHash = keccak256(line i). `fault` says which
 * file a refusal names: the data (a count that differs) or the manifest (a row that does not match).
 */
export function checkManifestAgainstData(
  manifest: Manifest,
  dataText: string,
): { ok: true; value: true } | (Failure<'BAD_INPUT'> & { fault: 'data' | 'manifest' }) {
  const lines = splitLines(dataText)
  if (lines.length !== manifest.rows.length) {
    return {
      ...fail(
        'BAD_INPUT',
        `manifest has ${manifest.rows.length} rows but the data file has ${lines.length} lines`,
      ),
      fault: 'data',
    }
  }
  for (let i = 0; i < lines.length; i++) {
    const want = manifest.rows[i]!.paramsHash.toLowerCase()
    if (lineHash(lines[i]!) !== want)
      return {
        ...fail('BAD_INPUT', `rows[${i}].paramsHash: does not equal keccak256 of data line ${i + 1}`),
        fault: 'manifest',
      }
  }
  return { ok: true, value: true }
}

/** The manifest for a data file and its request hashes (line n ↔ line n). */
export function buildManifest(
  agentId: string,
  lines: readonly string[],
  requestHashes: readonly Hex[],
): Manifest {
  if (lines.length !== requestHashes.length)
    throw new Error(`${lines.length} lines but ${requestHashes.length} request hashes`)
  return {
    version: 1,
    chainId: CHAIN_ID,
    agentId,
    rows: lines.map((l, i) => ({ paramsHash: lineHash(l), requestHash: requestHashes[i]! })),
  }
}
