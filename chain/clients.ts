// viem clients for chain id 10143: the same code path serves the local anvil and Monad testnet;
// only the RPC URL (and addresses, from the chain file) differ.
import {
  type Account,
  type Chain,
  type Hex,
  type PublicClient,
  type Transport,
  type WalletClient,
  createPublicClient,
  createWalletClient,
  defineChain,
  http,
} from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { CHAIN_ID } from './chain-id.ts'

export function svcChain(rpcUrl: string): Chain {
  return defineChain({
    id: CHAIN_ID,
    name: 'Monad Testnet',
    nativeCurrency: { name: 'Monad', symbol: 'MON', decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
    testnet: true,
  })
}

export interface ClientOptions {
  /** How often receipts are polled; loopback anvil answers in a millisecond, Monad in ~0.5 s. */
  pollingInterval?: number
  /** Per request timeout (ms). */
  timeout?: number
  /**
   * Retries of one RPC call (viem's transport: 429/403/408/413/5xx, timeouts, dropped
   * connections; a 429's integer `Retry-After` seconds is waited, else 150 ms doubling).
   * Default 0: callers that add their own loop say so.
   */
  retryCount?: number
  /**
   * JSON-RPC batching: calls made in the same tick go in one HTTP request (viem's
   * `batch`), so checking hundreds of rows is one round trip, and one request against a rate limit.
   */
  batch?: boolean
  /** Told when the RPC answers 429: until when (ms since epoch) it asked us to wait. */
  onRateLimited?(untilMs: number): void
}

/** Retry-After is seconds or an HTTP date (RFC 9110 §10.2.3); absent or unreadable: 1 s. */
export function retryAfterMs(header: string | null, nowMs: number): number {
  if (header !== null && /^\s*\d+\s*$/.test(header)) return Number(header) * 1000
  const at = header !== null ? Date.parse(header) : Number.NaN
  return Number.isNaN(at) ? 1000 : Math.max(0, at - nowMs)
}

function transportFor(rpcUrl: string, opts: ClientOptions) {
  return http(rpcUrl, {
    timeout: opts.timeout ?? 15_000,
    retryCount: opts.retryCount ?? 0,
    ...(opts.batch ? { batch: { batchSize: 200, wait: 0 } } : {}),
    ...(opts.onRateLimited
      ? {
          onFetchResponse: (res: Response) => {
            if (res.status === 429)
              opts.onRateLimited!(Date.now() + retryAfterMs(res.headers.get('retry-after'), Date.now()))
          },
        }
      : {}),
  })
}

export type SvcPublicClient = PublicClient<Transport, Chain>
export type SvcWalletClient = WalletClient<Transport, Chain, Account>

function isLoopback(rpcUrl: string): boolean {
  try {
    const h = new URL(rpcUrl).hostname
    return h === '127.0.0.1' || h === 'localhost' || h === '[::1]'
  } catch {
    return false
  }
}

export function publicClientFor(rpcUrl: string, opts: ClientOptions = {}): SvcPublicClient {
  return createPublicClient({
    chain: svcChain(rpcUrl),
    transport: transportFor(rpcUrl, opts),
    pollingInterval: opts.pollingInterval ?? (isLoopback(rpcUrl) ? 50 : 500),
  })
}

export function walletClientFor(rpcUrl: string, privateKey: Hex, opts: ClientOptions = {}): SvcWalletClient {
  return createWalletClient({
    account: privateKeyToAccount(privateKey),
    chain: svcChain(rpcUrl),
    transport: transportFor(rpcUrl, opts),
    pollingInterval: opts.pollingInterval ?? (isLoopback(rpcUrl) ? 50 : 500),
  })
}
