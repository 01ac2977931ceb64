// Verify's registry reads, many rows per eth_call: the ValidationBatchReader runtime code is
// placed at an unused address by an eth_call state override (nothing is deployed), and reads
// `rowsPerCall` rows per call with at most `concurrency` calls in flight. The reader answers
// packed records (batch-reader-codec.ts); a reverted read keeps its reason ("unknown" = no such
// request).
import type { Address, Hex } from 'viem'
import type { SvcPublicClient } from '../../chain/clients.ts'
import { batchReaderRuntime } from './batch-reader.generated.ts'
import { decodeReadResult, encodeReadCall } from './batch-reader-codec.ts'
import type { ValidationRead } from './validation-read.ts'
import { errorText } from '../../errors/text.ts'

/** Where the reader's code is put for the call; no account lives there on any real chain. */
export const READER_ADDRESS: Address = '0x5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c'

async function readChunk(
  client: SvcPublicClient,
  registry: Address,
  hashes: Hex[],
): Promise<ValidationRead[]> {
  const failAll = (error: string): ValidationRead[] =>
    hashes.map(() => ({ ok: false, code: 'UNREACHABLE', kind: 'unreachable', error }))
  const call = encodeReadCall(registry, hashes)
  if (!call.ok) return failAll(call.error)
  try {
    const r = await client.call({
      to: READER_ADDRESS,
      data: call.data,
      stateOverride: [{ address: READER_ADDRESS, code: batchReaderRuntime }],
    })
    if (!r.data) return failAll('the batch read returned no data')
    const d = decodeReadResult(r.data, hashes.length)
    return d.ok ? d.reads : failAll(d.error)
  } catch (err) {
    return failAll(errorText(err).split('\n')[0]!)
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
