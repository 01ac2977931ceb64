// The chain reads the market makes, behind one small interface so routes stay short and tests
// can count calls. The viem implementation below reads through the configured RPC. Verify reads
// many rows per eth_call (batch-reader.ts, a state-override reader); an RPC that refuses state
// overrides gets JSON-RPC batches of single reads instead, with a bounded number in flight.
import {
  type Address,
  type Hex,
  TransactionNotFoundError,
  TransactionReceiptNotFoundError,
  createPublicClient,
  http,
} from 'viem'
import { type SvcPublicClient, publicClientFor, svcChain } from '../../chain/clients.ts'
import { type ReadResult, readAgentWallet, readOwnerOf, readValidationStatus } from '../../chain/reads.ts'
import type { MarketChainConfig } from '../config.ts'
import { readValidationOverride } from './batch-reader.ts'
import type { ValidationRead } from './validation-read.ts'
import { errorText } from '../../errors/text.ts'

export type PaymentRead =
  | { state: 'unknown' }
  | { state: 'pending'; from: Address; to: Address | null; value: bigint; chainId: number | null }
  | {
      state: 'mined'
      success: boolean
      from: Address
      to: Address | null
      value: bigint
      chainId: number | null
      blockNumber: bigint
    }
  | { state: 'unreachable'; error: string }

export interface MarketChain {
  ownerOf(agentId: bigint): Promise<ReadResult<Address>>
  agentWallet(agentId: bigint): Promise<ReadResult<Address>>
  /** One result per hash, in order. Never one call at a time: batched, bounded concurrency. */
  validationStatuses(hashes: readonly Hex[]): Promise<ValidationRead[]>
  payment(txHash: Hex): Promise<PaymentRead>
  chainId(): Promise<ReadResult<number>>
  /** The latest block: a verification says which block its rows were read at. */
  blockNumber(): Promise<ReadResult<bigint>>
}

export function viemMarketChain(cfg: MarketChainConfig): MarketChain {
  const client: SvcPublicClient = publicClientFor(cfg.rpcUrl)
  const batched = createPublicClient({
    chain: svcChain(cfg.rpcUrl),
    transport: http(cfg.rpcUrl, {
      batch: { batchSize: cfg.batchSize, wait: 0 },
      retryCount: 0,
      timeout: 30_000,
    }),
  }) as SvcPublicClient
  let useOverride = true
  return {
    ownerOf: (agentId) => readOwnerOf(client, cfg.identityRegistry, agentId),
    agentWallet: (agentId) => readAgentWallet(client, cfg.identityRegistry, agentId),
    async validationStatuses(hashes) {
      if (useOverride) {
        const r = await readValidationOverride(
          client,
          cfg.validationRegistry,
          hashes,
          cfg.batchSize,
          cfg.concurrency,
        )
        if (!r.every((x) => !x.ok && x.kind === 'unreachable')) return r
        // Every chunk failed: perhaps this RPC refuses state overrides. Try plain batches once.
        const b = await readValidationBatched(
          batched,
          cfg.validationRegistry,
          hashes,
          cfg.batchSize,
          cfg.concurrency,
        )
        if (!b.every((x) => !x.ok && x.kind === 'unreachable')) useOverride = false
        return b
      }
      return readValidationBatched(batched, cfg.validationRegistry, hashes, cfg.batchSize, cfg.concurrency)
    },
    payment: (txHash) => readPayment(client, txHash),
    chainId: () => unreachableAsError(() => client.getChainId()),
    blockNumber: () => unreachableAsError(() => client.getBlockNumber({ cacheTime: 0 })),
  }
}

/**
 * Windows of `batchSize × concurrency` calls: viem's batching transport packs the calls of one
 * tick into JSON-RPC batches of `batchSize`, so at most `concurrency` HTTP requests are in flight.
 */
export async function readValidationBatched(
  client: SvcPublicClient,
  registry: Address,
  hashes: readonly Hex[],
  batchSize: number,
  concurrency: number,
): Promise<ValidationRead[]> {
  const out: ValidationRead[] = []
  const window = Math.max(1, batchSize * concurrency)
  for (let i = 0; i < hashes.length; i += window) {
    const part = hashes.slice(i, i + window)
    const reads = await Promise.all(part.map((h) => readValidationStatus(client, registry, h)))
    for (const r of reads) out.push(r.ok ? { ok: true, row: r.value } : r)
  }
  return out
}

async function readPayment(client: SvcPublicClient, hash: Hex): Promise<PaymentRead> {
  try {
    let tx
    try {
      tx = await client.getTransaction({ hash })
    } catch (err) {
      if (err instanceof TransactionNotFoundError) return { state: 'unknown' }
      throw err
    }
    const base = { from: tx.from, to: tx.to, value: tx.value, chainId: tx.chainId ?? null }
    if (tx.blockNumber === null) return { state: 'pending', ...base }
    try {
      const rcpt = await client.getTransactionReceipt({ hash })
      return { state: 'mined', success: rcpt.status === 'success', blockNumber: rcpt.blockNumber, ...base }
    } catch (err) {
      if (err instanceof TransactionReceiptNotFoundError) return { state: 'pending', ...base }
      throw err
    }
  } catch (err) {
    return { state: 'unreachable', error: errorText(err).split('\n')[0]! }
  }
}

/** A read that can only fail by not reaching the chain. */
async function unreachableAsError<T>(read: () => Promise<T>): Promise<ReadResult<T>> {
  try {
    return { ok: true, value: await read() }
  } catch (err) {
    return {
      ok: false,
      code: 'UNREACHABLE',
      kind: 'unreachable',
      error: errorText(err).split('\n')[0]!,
    }
  }
}
