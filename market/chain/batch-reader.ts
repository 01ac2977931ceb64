// Verify's registry reads, many rows per eth_call: the ValidationBatchReader runtime code is
// placed at an unused address by an eth_call state override (nothing is deployed), and reads
// `rowsPerCall` rows per call with at most `concurrency` calls in flight. Each row is decoded
// with the registry's own ABI; a reverted read keeps its reason ("unknown" = no such request).
import { type Address, type Hex, decodeErrorResult, decodeFunctionResult, encodeFunctionData } from 'viem'
import { validationRegistryAbi } from '../../chain/abi.ts'
import type { SvcPublicClient } from '../../chain/clients.ts'
import { batchReaderAbi, batchReaderRuntime } from './batch-reader.artifact.ts'
import type { ValidationRead } from './market-chain.ts'

/** Where the reader's code is put for the call; no account lives there on any real chain. */
export const READER_ADDRESS: Address = '0x5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c'
const ERROR_ABI = [{ type: 'error', name: 'Error', inputs: [{ name: 'reason', type: 'string' }] }] as const

function decodeRow(ok: boolean, data: Hex): ValidationRead {
  if (ok) {
    try {
      const [validator, agentId, response, responseHash, tag, lastUpdate] = decodeFunctionResult({ abi: validationRegistryAbi, functionName: 'getValidationStatus', data })
      return { ok: true, row: { validator, agentId, response, responseHash, tag, lastUpdate } }
    } catch {
      return { ok: false, kind: 'reverted', error: 'the registry answered data that does not decode' }
    }
  }
  let reason: string | null = null
  try {
    reason = decodeErrorResult({ abi: ERROR_ABI, data }).args[0]
  } catch {
    reason = null
  }
  if (reason === 'unknown') return { ok: false, kind: 'unknown', error: 'unknown request hash' }
  return { ok: false, kind: 'reverted', error: reason ?? 'reverted without a reason' }
}

async function readChunk(client: SvcPublicClient, registry: Address, hashes: Hex[]): Promise<ValidationRead[]> {
  try {
    const r = await client.call({
      to: READER_ADDRESS,
      data: encodeFunctionData({ abi: batchReaderAbi, functionName: 'read', args: [registry, hashes] }),
      stateOverride: [{ address: READER_ADDRESS, code: batchReaderRuntime }],
    })
    if (!r.data) throw new Error('the batch read returned no data')
    const [oks, results] = decodeFunctionResult({ abi: batchReaderAbi, functionName: 'read', data: r.data })
    return oks.map((ok, i) => decodeRow(ok, results[i]!))
  } catch (err) {
    const msg = err instanceof Error ? err.message.split('\n')[0]! : String(err)
    return hashes.map(() => ({ ok: false, kind: 'unreachable', error: msg }))
  }
}

/** One result per hash, in order. */
export async function readValidationOverride(
  client: SvcPublicClient,
  registry: Address,
  hashes: readonly Hex[],
  rowsPerCall: number,
  concurrency: number,
): Promise<ValidationRead[]> {
  const chunks: Hex[][] = []
  for (let i = 0; i < hashes.length; i += rowsPerCall) chunks.push(hashes.slice(i, i + rowsPerCall))
  const results: ValidationRead[][] = new Array(chunks.length)
  let next = 0
  await Promise.all(
    Array.from({ length: Math.min(concurrency, chunks.length) }, async () => {
      while (next < chunks.length) {
        const i = next++
        results[i] = await readChunk(client, registry, chunks[i]!)
      }
    }),
  )
  return results.flat()
}
