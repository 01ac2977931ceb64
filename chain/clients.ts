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
    transport: http(rpcUrl, { timeout: opts.timeout ?? 15_000, retryCount: 0 }),
    pollingInterval: opts.pollingInterval ?? (isLoopback(rpcUrl) ? 50 : 500),
  })
}

export function walletClientFor(rpcUrl: string, privateKey: Hex, opts: ClientOptions = {}): SvcWalletClient {
  return createWalletClient({
    account: privateKeyToAccount(privateKey),
    chain: svcChain(rpcUrl),
    transport: http(rpcUrl, { timeout: opts.timeout ?? 15_000, retryCount: 0 }),
    pollingInterval: opts.pollingInterval ?? (isLoopback(rpcUrl) ? 50 : 500),
  })
}
