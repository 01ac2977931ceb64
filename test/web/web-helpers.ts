// A real market with the website mounted, on a free loopback port over a real dev chain. The
// API-side helpers (sign-in, keys, datasets, uploads) are the market tests' own.
import { join } from 'node:path'
import type { DevChain } from '../../chain/dev.ts'
import { buildMarketApp } from '../../market/app.ts'
import { chainFromInfo, defaultConfig, type MarketConfig } from '../../market/config.ts'
import { marketPages } from '../../market/pages/index.ts'
import { freePort } from '../helpers/ports.ts'
import { tempDir } from '../helpers/tmp.ts'
import type { Running } from '../market/market-helpers.ts'

interface T {
  teardown(fn: () => unknown): void
}

export async function startWebMarket(t: T, dev: DevChain): Promise<Running> {
  const dir = await tempDir(t, 'svc-web-')
  const base = defaultConfig(join(dir, 'data'))
  base.samples = true
  for (const k of Object.keys(base.rateLimits) as (keyof MarketConfig['rateLimits'])[]) base.rateLimits[k] = { max: 100_000, windowSeconds: 60 }
  const r = chainFromInfo(base, dev.info)
  if (!r.ok) throw new Error(r.error)
  const market = await buildMarketApp({ config: r.config, pages: marketPages })
  const port = await freePort()
  await market.app.listen({ host: '127.0.0.1', port })
  t.teardown(() => market.close())
  return { url: `http://127.0.0.1:${port}`, market }
}
