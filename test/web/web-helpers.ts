// A real market with the website mounted, on a free loopback port over a real dev chain: the
// market tests' own helper, with the pages plugin.
import type { DevChain } from '../../chain/dev.ts'
import { marketPages } from '../../market/pages/index.ts'
import { type Running, startMarket } from '../market/market-helpers.ts'

interface T {
  teardown(fn: () => unknown): void
}

export function startWebMarket(t: T, dev: DevChain): Promise<Running> {
  return startMarket(t, dev, undefined, { pages: marketPages })
}
