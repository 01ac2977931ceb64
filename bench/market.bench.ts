// Market figures, each beside a baseline measured in this same process on this machine:
//   1. verify of 5,000 attested rows (the route)         vs  a naive sequential per-row read;
//   2. listing upload of a 20 MB / 5,000-row dataset     vs  posting the same bytes to a bare route;
//   3. GET one listing, requests/s                        vs  Fastify hello world.
import { request } from 'node:http'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Fastify from 'fastify'
import { type Hex, createPublicClient, http, keccak256, toHex } from 'viem'
import { type SvcPublicClient, publicClientFor, svcChain } from '../chain/clients.ts'
import { readValidationBatched } from '../market/chain/market-chain.ts'
import { startDevChain } from '../chain/dev.ts'
import { readValidationStatus } from '../chain/reads.ts'
import { buildMarketApp } from '../market/app.ts'
import { chainFromInfo, defaultConfig } from '../market/config.ts'
import { lineHash } from '../records/index.ts'
import { writeRows } from '../test/market/chain-rows.ts'
import { api, issueKey, postListing, signIn } from '../test/market/market-helpers.ts'
import { freePort } from '../test/helpers/ports.ts'
import { CHAIN_ID } from '../chain/chain-id.ts'

const ROWS = 5000
const BYTES = 20 * 1024 * 1024

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const ms = (n: number): string => `${n.toFixed(0)} ms`

async function timed<T>(fn: () => Promise<T>): Promise<[number, T]> {
  const t0 = performance.now()
  const v = await fn()
  return [performance.now() - t0, v]
}

/** `conc` keep-alive clients hammering one URL for `seconds`; returns requests per second. */
async function reqPerSec(url: string, seconds: number, conc = 16): Promise<number> {
  const u = new URL(url)
  const { Agent } = await import('node:http')
  const agent = new Agent({ keepAlive: true, maxSockets: conc })
  let done = 0
  const end = performance.now() + seconds * 1000
  const one = () =>
    new Promise<void>((resolve, reject) => {
      const req = request({ host: u.hostname, port: u.port, path: u.pathname + u.search, agent }, (res) => {
        res.resume()
        res.on('end', () => {
          if (res.statusCode !== 200) reject(new Error(`status ${res.statusCode}`))
          else resolve()
        })
      })
      req.on('error', reject)
      req.end()
    })
  await Promise.all(
    Array.from({ length: conc }, async () => {
      while (performance.now() < end) {
        await one()
        done++
      }
    }),
  )
  agent.destroy()
  return done / seconds
}

const dev = await startDevChain()
const dir = await mkdtemp(join(tmpdir(), 'svc-market-bench-'))
const teardown: (() => unknown)[] = []
try {
  const base = defaultConfig(join(dir, 'data'))
  for (const k of Object.keys(base.rateLimits) as (keyof typeof base.rateLimits)[])
    base.rateLimits[k] = { max: 1_000_000, windowSeconds: 60 }
  const r = chainFromInfo(base, dev.info)
  if (!r.ok) throw new Error(r.error)
  const market = await buildMarketApp({ config: r.config })
  teardown.push(() => market.close())
  const port = await freePort()
  await market.app.listen({ host: '127.0.0.1', port })
  const url = `http://127.0.0.1:${port}`

  // A 20 MB, 5,000-row dataset, every row attested on the chain.
  const each = Math.floor(BYTES / ROWS) - 1
  const lines = Array.from({ length: ROWS }, (_, i) => {
    const head = `{"action":"vend","i":${i},"pad":"`
    return head + 'x'.repeat(each - head.length - 2) + '"}'
  })
  const requestHashes = lines.map((_, i) => keccak256(toHex(`bench:${process.pid}:${i}`)))
  const manifest = {
    version: 1,
    chainId: CHAIN_ID,
    agentId: dev.agentId,
    rows: lines.map((l, i) => ({ paramsHash: lineHash(l), requestHash: requestHashes[i]! })),
  }
  const data = lines.join('\n') + '\n'
  const ds = { lines, data, requestHashes, manifest }
  const [writeMs] = await timed(() =>
    writeRows(
      dev,
      manifest.rows.map((row) => ({ requestHash: row.requestHash as Hex, paramsHash: row.paramsHash })),
    ),
  )
  process.stdout.write(
    `setup: ${ROWS} registry rows written in ${ms(writeMs)}; data file ${(Buffer.byteLength(data) / 1048576).toFixed(1)} MB\n`,
  )

  const cookie = await signIn(url, dev.accounts.owner.privateKey)
  const key = (await issueKey(url, cookie, dev.accounts.owner.privateKey, dev.agentId)).json.key as string

  // 2. upload: market route vs the same multipart bytes to a bare Fastify route that only reads them.
  const bare = Fastify({ bodyLimit: 64 * 1024 * 1024 })
  bare.addContentTypeParser(
    'multipart/form-data',
    { parseAs: 'buffer', bodyLimit: 64 * 1024 * 1024 },
    (_r, b, done) => done(null, b),
  )
  bare.post('/x', async (req) => ({ n: (req.body as Buffer).length }))
  const barePort = await freePort()
  await bare.listen({ host: '127.0.0.1', port: barePort })
  teardown.push(() => bare.close())
  const uploads: number[] = []
  const bareUploads: number[] = []
  let slug = ''
  for (let i = 0; i < 3; i++) {
    const [t, res] = await timed(() => postListing(url, key, ds))
    if (res.status !== 201) throw new Error(`upload failed: ${JSON.stringify(res.json)}`)
    slug = res.json.slug as string
    uploads.push(t)
    const form = new FormData()
    form.append('manifest', new Blob([JSON.stringify(manifest)]), 'manifest.json')
    form.append('data', new Blob([data]), 'operations.jsonl')
    const [tb] = await timed(async () =>
      (await fetch(`http://127.0.0.1:${barePort}/x`, { method: 'POST', body: form })).text(),
    )
    bareUploads.push(tb)
  }

  // 1. verify: the route (batched) vs a naive sequential read of every row.
  const verifies: number[] = []
  for (let i = 0; i < 3; i++) {
    const [t, v] = await timed(() => api(url, `/api/marketplace/listings/${slug}/verify`, { method: 'POST' }))
    if (v.status !== 200 || v.json.passed !== ROWS)
      throw new Error(`verify did not pass every row: ${JSON.stringify(v.json).slice(0, 300)}`)
    verifies.push(t)
  }
  const pub = publicClientFor(dev.rpcUrl)
  const batched = createPublicClient({
    chain: svcChain(dev.rpcUrl),
    transport: http(dev.rpcUrl, { batch: { batchSize: 500, wait: 0 }, retryCount: 0, timeout: 30_000 }),
  }) as SvcPublicClient
  const batchRuns: number[] = []
  for (let i = 0; i < 3; i++)
    batchRuns.push(
      (await timed(() => readValidationBatched(batched, dev.validationRegistry, requestHashes, 500, 2)))[0],
    )
  const [naive] = await timed(async () => {
    for (const h of requestHashes) {
      const r = await readValidationStatus(pub, dev.validationRegistry, h)
      if (!r.ok) throw new Error(r.error)
    }
  })

  // 3. GET one listing vs hello world, same client, same duration.
  const hello = Fastify()
  hello.get('/', async () => ({ hello: 'world' }))
  const helloPort = await freePort()
  await hello.listen({ host: '127.0.0.1', port: helloPort })
  teardown.push(() => hello.close())
  await reqPerSec(`${url}/api/marketplace/listings/${slug}`, 0.5)
  const helloRps = await reqPerSec(`http://127.0.0.1:${helloPort}/`, 3)
  const listingRps = await reqPerSec(`${url}/api/marketplace/listings/${slug}`, 3)

  const v = median(verifies)
  const u = median(uploads)
  process.stdout.write(
    [
      `verify ${ROWS} rows:        ${ms(v)} (route, median of 3: ${verifies.map((x) => x.toFixed(0)).join(', ')} ms)   naive sequential per-row reads: ${ms(naive)}   speed-up ${(naive / v).toFixed(1)}x   (aim >= 20x and < 1 s)`,
      `  (fallback without state overrides, JSON-RPC batches of single reads: ${ms(median(batchRuns))})`,
      `upload 20 MB / ${ROWS} rows: ${ms(u)} (median of 3)   same bytes to a bare Fastify route: ${ms(median(bareUploads))}   (aim < 2 s)`,
      `GET one listing:          ${listingRps.toFixed(0)} req/s   Fastify hello world: ${helloRps.toFixed(0)} req/s   ratio ${(listingRps / helloRps).toFixed(2)}`,
    ].join('\n') + '\n',
  )
} finally {
  for (const f of teardown.reverse()) await f()
  await dev.stop()
  await rm(dir, { recursive: true, force: true })
}
