// The market's errors on a real app (LevelDB store, no chain needed: nothing here reads it):
// refusals answer `{ error, code }` with the code's status, and a failure is a 500 the market's
// logger records with the error object (market/API.md, "Errors").
import { join } from 'node:path'
import t from 'tap'
import { buildMarketApp } from '../../market/app.ts'
import { type MarketConfig, defaultConfig } from '../../market/config.ts'
import { logLines } from '../helpers/log-lines.ts'
import { tempDir } from '../helpers/tmp.ts'

const ZERO = '0x0000000000000000000000000000000000000001' as const

t.test("refusals carry a code; a failure is a 500 in the market's log with the error", async (t) => {
  const dir = await tempDir(t, 'svc-market-')
  const config: MarketConfig = {
    ...defaultConfig(join(dir, 'data')),
    chain: {
      rpcUrl: 'http://127.0.0.1:1',
      chainId: 31337,
      identityRegistry: ZERO,
      validationRegistry: ZERO,
      attestor: ZERO,
      payout: ZERO,
      batchSize: 10,
      concurrency: 1,
    },
  }
  const { log, lines } = logLines()
  const market = await buildMarketApp({
    config,
    log,
    plugins: [
      async (app) => {
        app.get('/api/boom', async () => {
          throw new Error('the blockstore is gone')
        })
      },
    ],
  })
  t.teardown(() => market.close())
  const app = market.app

  const missing = await app.inject({ method: 'GET', url: '/api/marketplace/listings/no-such-listing' })
  t.equal(missing.statusCode, 404)
  t.match(missing.json(), { error: /no-such-listing/, code: 'NOT_FOUND' })
  const signedOut = await app.inject({ method: 'GET', url: '/api/marketplace/keys' })
  t.equal(signedOut.statusCode, 401)
  t.same(signedOut.json(), { error: 'sign in first: no valid svc_session cookie', code: 'UNAUTHORIZED' })
  const route = await app.inject({ method: 'GET', url: '/api/nothing' })
  t.same(route.json(), { error: 'no route GET /api/nothing', code: 'NOT_FOUND' })
  t.same(lines, [], 'refusals are not logged as failures')

  const boom = await app.inject({ method: 'GET', url: '/api/boom' })
  t.equal(boom.statusCode, 500)
  t.same(boom.json(), { error: 'internal error', code: 'INTERNAL' })
  t.match(lines, [
    {
      level: 50,
      status: 500,
      url: '/api/boom',
      err: { message: 'the blockstore is gone', stack: /errors\.test/ },
    },
  ])
})
