// Website figures, each beside a baseline measured in this same process (in-process requests
// through Fastify's inject, so the figures are the server's own work, not the socket's):
//   1. GET /marketplace (browse page, 24 cards rendered)  vs  GET /api/marketplace/listings (the JSON it renders);
//   2. GET /marketplace/<slug> (listing page, with its data preview: 8 fields, an action histogram,
//      5 sample lines; the description as Markdown)      vs  GET /api/marketplace/listings/<slug>;
//   3. renderer alone: browseMain for 24 listings           vs  JSON.stringify of the same 24 listings.
// No chain is read by these routes; the chain settings point nowhere.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildMarketApp } from '../market/app.ts'
import { defaultConfig } from '../market/config.ts'
import { browseMain, browseQuery } from '../market/pages/browse.ts'
import { marketPages } from '../market/pages/index.ts'
import { buildPreview } from '../market/listings/preview.ts'
import { listingView } from '../market/listings/view.ts'
import { canonicalLine, lineHash } from '../records/index.ts'
import type { ListingRecord } from '../market/store/records.ts'
import { CHAIN_ID } from '../chain/chain-id.ts'

const LISTINGS = 500
const SECONDS = 4

async function perSec(fn: () => Promise<unknown> | unknown, seconds = SECONDS): Promise<number> {
  for (let i = 0; i < 50; i++) await fn() // warm-up
  let n = 0
  const t0 = performance.now()
  const end = t0 + seconds * 1000
  while (performance.now() < end) {
    await fn()
    n++
  }
  return n / ((performance.now() - t0) / 1000)
}

/**
 * A figure and its baseline measured in alternating half-second slices (16 of each), so a load
 * that comes and goes on a shared machine weighs on both alike: measured one after the other,
 * the listing page's ratio swung from 0.39 to 1.07 between two runs a minute apart.
 */
async function paired(
  fn: () => Promise<unknown>,
  base: () => Promise<unknown>,
  seconds = SECONDS,
): Promise<{ fig: number; base: number }> {
  for (let i = 0; i < 50; i++) {
    await fn()
    await base()
  }
  const slices = 16
  const slice = (seconds * 1000) / (slices / 2)
  const tally = { fig: { n: 0, ms: 0 }, base: { n: 0, ms: 0 } }
  for (let s = 0; s < slices; s++) {
    const which = s % 2 === 0 ? tally.base : tally.fig
    const f = s % 2 === 0 ? base : fn
    const t0 = performance.now()
    while (performance.now() - t0 < slice / 2) {
      await f()
      which.n++
    }
    which.ms += performance.now() - t0
  }
  return { fig: tally.fig.n / (tally.fig.ms / 1000), base: tally.base.n / (tally.base.ms / 1000) }
}

const fmt = (n: number): string => `${n.toFixed(0)}/s`

const dir = await mkdtemp(join(tmpdir(), 'svc-web-bench-'))
const config = defaultConfig(join(dir, 'data'))
config.samples = false
const zero = '0x0000000000000000000000000000000000000001' as const
config.chain = {
  rpcUrl: 'http://127.0.0.1:9',
  chainId: CHAIN_ID,
  identityRegistry: zero,
  validationRegistry: zero,
  attestor: zero,
  payout: zero,
  batchSize: 250,
  concurrency: 4,
}
const market = await buildMarketApp({ config, pages: marketPages })
// One preview shared by every listing, shaped like the hub's chain_attest records.
const lines = Array.from({ length: 500 }, (_, i) =>
  canonicalLine({
    action: ['vend', 'refill', 'jam', 'door'][i % 4],
    at: new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString(),
    params: { slot: `A${i % 8}`, cents: 100 + (i % 50), ok: i % 9 !== 0, temp: { c: 4 + (i % 3) / 10 } },
    request_uri: `svc://vend1/${i}`,
  }),
)
const preview = buildPreview(
  lines,
  lines.map((l) => ({ paramsHash: lineHash(l), requestHash: lineHash(`r${l}`) })),
  5,
)
try {
  const recs: ListingRecord[] = Array.from({ length: LISTINGS }, (_, i) => ({
    slug: `bench-listing-${i}`,
    title: `Bench listing ${i} <with> "markup" & more`,
    summary: 'A summary of the operations in this dataset, long enough to look like a real one.',
    description: `## What is in it\n\nEvery **vend** of one machine, one \`chain_attest\` record per line.\n\n- slot and price\n- door and jam events\n\n${'D'.repeat(1800)}`,
    machineType: (['vending', 'arm', 'drone', 'sensor'] as const)[i % 4]!,
    license: 'research',
    priceNative: '0.05',
    priceWei: '50000000000000000',
    payout: zero,
    agentId: String(i % 7),
    keyId: 'k',
    ownerWallet: zero,
    ownerAccount: zero,
    dataCid: 'bafy',
    manifestCid: 'bafy',
    imageCid: null,
    imageType: null,
    rows: 100 + i,
    dataBytes: 10_000 + i,
    status: 'listed',
    sample: false,
    createdAt: Date.now() - i * 3_600_000,
    preview,
  }))
  for (const r of recs) await market.ctx.db.listings.put(r.slug, r)
  const app = market.app
  const get = (url: string) => async () => {
    const r = await app.inject({ method: 'GET', url })
    if (r.statusCode !== 200) throw new Error(`${url}: ${r.statusCode}`)
  }

  const { fig: page, base: apiList } = await paired(
    get('/marketplace'),
    get('/api/marketplace/listings?limit=24'),
  )
  console.log(
    `browse page (24 of ${LISTINGS} listings): ${fmt(page)}  vs  JSON API baseline ${fmt(apiList)}  (page/API ${(page / apiList).toFixed(2)})`,
  )

  const { fig: pageOne, base: apiOne } = await paired(
    get('/marketplace/bench-listing-7'),
    get('/api/marketplace/listings/bench-listing-7'),
  )
  console.log(
    `listing page: ${fmt(pageOne)}  vs  JSON API baseline ${fmt(apiOne)}  (page/API ${(pageOne / apiOne).toFixed(2)})`,
  )

  const views = recs.slice(0, 24).map((l) => listingView(l))
  const q = browseQuery({})
  const json = await perSec(() => JSON.stringify({ total: LISTINGS, listings: views }), 2)
  const render = await perSec(() => browseMain(q, { ok: true, total: LISTINGS, listings: views }, 'MON'), 2)
  console.log(
    `render 24 cards: ${fmt(render)}  vs  JSON.stringify baseline ${fmt(json)}  (render/JSON ${(render / json).toFixed(2)})`,
  )
} finally {
  await market.close()
  await rm(dir, { recursive: true, force: true })
}
