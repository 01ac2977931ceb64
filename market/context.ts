// What every route group of the market is given: settings, storage, chain reads, files.
import type { MarketChainConfig, MarketConfig } from './config.ts'
import type { MarketChain } from './chain/market-chain.ts'
import type { BlockStore } from './files/blockstore.ts'
import type { SessionOptions } from './auth/session.ts'
import type { MarketDb } from './store/store.ts'
import type { KeyedLock } from './store/keyed-lock.ts'

export interface MarketContext {
  config: MarketConfig
  chainConfig: MarketChainConfig
  db: MarketDb
  chain: MarketChain
  blocks: BlockStore
  locks: KeyedLock
  session: SessionOptions
  now: () => number
}
