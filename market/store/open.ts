// Which engine a market runs on: PostgreSQL when `[store] url` (or SVC_MARKET_STORE) names one,
// else LevelDB in `<dataDir>/market.db`.
import { join } from 'node:path'
import { openLevelStore } from './leveldb.ts'
import { openPgStore } from './postgres.ts'
import type { MarketStore } from './store.ts'

export function openMarketStore(o: { storeUrl: string | null; dataDir: string }): Promise<MarketStore> {
  if (o.storeUrl) return openPgStore(o.storeUrl)
  return openLevelStore(join(o.dataDir, 'market.db'))
}
