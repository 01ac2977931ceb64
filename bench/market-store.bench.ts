// Market figures by store engine and size, each beside a JSON hello-world route served and
// measured the same way in this same process (real HTTP on loopback, keep-alive, 8 in flight):
//   1. the browse page (24 cards, newest first), a search page and a listing page, at 1,000 and
//      at 100,000 listings, on LevelDB and on PostgreSQL: p50/p99 latency and pages/s; then
//      `browse ratio 100k/1k: <x>x` per engine (1.0x: a page costs the same whatever the size);
//   2. purchases/s (each a real paid transaction on anvil, checked and recorded): PostgreSQL with
//      2 `svc market` processes on one database, beside 1 process on PostgreSQL and on LevelDB.
// Run alone: `npm run bench -- market-store` (`-- market` also runs market.bench.ts).
import { type ChildProcess, spawn } from 'node:child_process'
import { Agent, request } from 'node:http'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import Fastify from 'fastify'
import { type Hex, parseEther } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { chainFilePath } from '../chain/chain-file.ts'
import { writeChainFile } from '../hub/files/chain-file.ts'
import { CHAIN_ID } from '../chain/chain-id.ts'
import { publicClientFor, walletClientFor } from '../chain/clients.ts'
import { startDevChain } from '../chain/dev.ts'
import { buildMarketApp } from '../market/app.ts'
import { defaultConfig } from '../market/config.ts'
import { marketPages } from '../market/pages/index.ts'
import type { ListingRecord } from '../market/store/records.ts'
import { freePort } from '../test/helpers/ports.ts'
import { type PgCluster, postgresMissing, startPostgres } from '../test/helpers/postgres.ts'
import { dataset, issueKey, postListing, signIn } from '../test/market/market-helpers.ts'

const SECONDS = Number(process.env.SVC_BENCH_SECONDS ?? 2)
const ROUNDS = 3
const CONC = 8
const SIZES = [1_000, 100_000]
const PURCHASES = 200
const root = fileURLToPath(new URL('..', import.meta.url))

interface Figures {
  p50: number
  p99: number
  perSec: number
}

/** `CONC` keep-alive clients on `url` for `SECONDS`: latency percentiles and answers per second. */
async function load(url: string, seconds = SECONDS): Promise<Figures> {
  const u = new URL(url)
  const agent = new Agent({ keepAlive: true, maxSockets: CONC })
  const one = () =>
    new Promise<number>((resolve, reject) => {
      const t0 = performance.now()
      const req = request({ host: u.hostname, port: u.port, path: u.pathname + u.search, agent }, (res) => {
        res.resume()
        res.on('end', () =>
          res.statusCode === 200
            ? resolve(performance.now() - t0)
            : reject(new Error(`${url}: ${res.statusCode}`)),
        )
      })
      req.on('error', reject)
      req.end()
    })
  for (let i = 0; i < 40; i++) await one() // warm-up
  const lat: number[] = []
  const t0 = performance.now()
  const end = t0 + seconds * 1000
  await Promise.all(
    Array.from({ length: CONC }, async () => {
      while (performance.now() < end) lat.push(await one())
    }),
  )
  const wall = (performance.now() - t0) / 1000
  agent.destroy()
  lat.sort((a, b) => a - b)
  const pct = (p: number) => lat[Math.min(lat.length - 1, Math.floor(lat.length * p))]!
  return { p50: pct(0.5), p99: pct(0.99), perSec: lat.length / wall }
}

const show = (f: Figures) =>
  `p50 ${f.p50.toFixed(1)} ms  p99 ${f.p99.toFixed(1)} ms  ${f.perSec.toFixed(0)} pages/s`

const VOCAB = Array.from({ length: 100 }, (_, i) => `w${i.toString(36)}x`)
const zero = '0x0000000000000000000000000000000000000001' as const
const TYPES = ['vending', 'arm', 'drone', 'sensor'] as const

function listing(i: number): ListingRecord {
  return {
    slug: `bench-${i}`,
    title: `Gearbox ${VOCAB[i % VOCAB.length]} run ${i}`,
    summary: 'A summary of the operations in this dataset, long enough to look like a real one.',
    description: 'D'.repeat(300),
    machineType: TYPES[i % 4]!,
    license: 'research',
    priceNative: '0.05',
    priceWei: String(BigInt(1 + (i % 97)) * 10n ** 15n),
    payout: zero,
    agentId: String(i % 50),
    keyId: 'k',
    ownerWallet: zero,
    ownerAccount: zero,
    dataCid: 'bafy',
    manifestCid: 'bafy',
    imageCid: null,
    imageType: null,
    rows: 100 + (i % 1000),
    dataBytes: 10_000,
    status: 'listed',
    sample: false,
    createdAt: 1_760_000_000_000 + i * 1000,
  }
}

const hello = Fastify()
hello.get('/hello', async () => ({ hello: 'world' }))
const helloUrl = `${await hello.listen({ host: '127.0.0.1', port: 0 })}/hello`

const work = await mkdtemp(join(tmpdir(), 'svc-store-bench-'))
const pgWhy = postgresMissing()
const teardowns: (() => unknown)[] = []
const t = { teardown: (fn: () => unknown) => void teardowns.push(fn) }
let cluster: PgCluster | null = null
if (pgWhy) console.log(`PostgreSQL figures skipped: ${pgWhy}`)
else cluster = await startPostgres(t, { durable: true })

try {
  const engines = cluster ? (['leveldb', 'postgres'] as const) : (['leveldb'] as const)
  for (const engine of engines) {
    // One market per size, both loaded first, then measured in alternation with the baseline
    // (ROUNDS rounds, medians), so a change in the machine's load falls on both sizes alike.
    const markets: { size: number; url: string; close: () => Promise<void> }[] = []
    try {
      for (const size of SIZES) {
        const config = defaultConfig(join(work, `${engine}-${size}`))
        config.samples = false
        config.reverifySeconds = 0
        config.storeUrl = engine === 'postgres' ? await cluster!.createDatabase(`browse_${size}`) : null
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
        const url = await market.app.listen({ host: '127.0.0.1', port: 0 })
        markets.push({ size, url, close: () => market.close() })
        const t0 = performance.now()
        for (let i = 0; i < size; i += 2000)
          await market.ctx.db.putListings(
            Array.from({ length: Math.min(2000, size - i) }, (_, j) => listing(i + j)),
          )
        console.log(
          `${engine}: ${size.toLocaleString('en')} listings loaded in ${((performance.now() - t0) / 1000).toFixed(0)} s`,
        )
      }
      const word = VOCAB[7]!
      const pages = (m: (typeof markets)[number]) => ({
        browse: `${m.url}/marketplace`,
        search: `${m.url}/marketplace?q=${word}`,
        listing: `${m.url}/marketplace/bench-${Math.floor(m.size / 2)}`,
      })
      const runs = new Map<string, Figures[]>()
      const keep = (k: string, f: Figures) => runs.set(k, [...(runs.get(k) ?? []), f])
      for (let r = 0; r < ROUNDS; r++) {
        keep('base', await load(helloUrl))
        for (const m of markets)
          for (const [name, u] of Object.entries(pages(m))) keep(`${m.size}:${name}`, await load(u))
      }
      const med = (k: string): Figures => {
        const xs = runs.get(k)!
        const m = (f: (x: Figures) => number) =>
          [...xs.map(f)].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
        return { p50: m((x) => x.p50), p99: m((x) => x.p99), perSec: m((x) => x.perSec) }
      }
      const b = med('base')
      console.log(`${engine}: baseline JSON hello world  ${show(b)}`)
      for (const m of markets) {
        console.log(`${engine} ${m.size.toLocaleString('en')} listings:`)
        for (const name of ['browse', 'search', 'listing']) {
          const f = med(`${m.size}:${name}`)
          const note = name === 'search' ? `  (q=${word}: 1 listing in 100 matches)` : ''
          console.log(
            `  ${`${name} page`.padEnd(13)} ${show(f)}  (${(f.perSec / b.perSec).toFixed(2)} of baseline)${note}`,
          )
        }
      }
      const r = med(`${SIZES[1]}:browse`).p50 / med(`${SIZES[0]}:browse`).p50
      console.log(
        `${engine} browse ratio 100k/1k: ${r.toFixed(2)}x  (p50 latency, median of ${ROUNDS} rounds)`,
      )
    } finally {
      for (const m of markets) await m.close()
    }
  }

  // Purchases: real payments on anvil, unlocked through `svc market` processes.
  const dev = await startDevChain()
  teardowns.push(() => dev.stop())
  const home = join(work, 'home')
  await mkdir(home, { recursive: true })
  await writeChainFile(chainFilePath(home), dev.info)
  const blocks = join(home, 'blocks')
  const pub = publicClientFor(dev.rpcUrl)
  const { owner, buyer, payout } = dev.accounts
  const buyerAcc = privateKeyToAccount(buyer.privateKey)

  async function instance(name: string, storeUrl: string | null): Promise<string> {
    const port = await freePort()
    const toml = join(home, `${name}.toml`)
    const limits = ['purchase', 'keys', 'challenges', 'signIn', 'verify'].flatMap((k) => [
      `[rateLimit.${k}]`,
      'max = 1000000',
    ])
    await writeFile(
      toml,
      [
        `dataDir = "${join(home, name)}"`,
        'samples = false',
        '[store]',
        `blocksDir = "${blocks}"`,
        '[verify]',
        'intervalSeconds = 0',
        ...limits,
        '',
      ].join('\n'),
    )
    const env = { ...process.env, SVC_HOME: home, ...(storeUrl ? { SVC_MARKET_STORE: storeUrl } : {}) }
    const proc: ChildProcess = spawn(
      process.execPath,
      [join(root, 'bin/svc.js'), 'market', '--config', toml, '--port', String(port)],
      {
        env,
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    )
    teardowns.push(async () => {
      if (proc.exitCode === null) {
        const done = new Promise((r) => proc.once('exit', r))
        proc.kill('SIGTERM')
        await done
      }
    })
    await new Promise<void>((resolve, reject) => {
      let out = ''
      proc.stdout!.on('data', (d: Buffer) => {
        out += d.toString()
        if (out.includes('market listening on')) resolve()
      })
      proc.once('exit', (c) => reject(new Error(`market ${name} exited ${c}: ${out}`)))
    })
    return `http://127.0.0.1:${port}`
  }

  async function purchases(label: string, urls: string[]): Promise<void> {
    const ownerCookie = await signIn(urls[0]!, owner.privateKey)
    const key = (await issueKey(urls[0]!, ownerCookie, owner.privateKey, dev.agentId)).json.key as string
    const posted = await postListing(urls[0]!, key, dataset(3, dev.agentId))
    const slug = posted.json.slug as string
    const wallet = walletClientFor(dev.rpcUrl, buyer.privateKey)
    const txs: Hex[] = []
    for (let i = 0; i < PURCHASES; i++)
      txs.push(await wallet.sendTransaction({ to: payout.address, value: parseEther('0.05') }))
    await pub.waitForTransactionReceipt({ hash: txs[txs.length - 1]! })
    const cookies = await Promise.all(urls.map((u) => signIn(u, buyer.privateKey)))
    const bodies = await Promise.all(
      txs.map(async (tx) => ({
        txHash: tx,
        signature: await buyerAcc.signMessage({
          message: ['svc marketplace', 'Unlock', `listing: ${slug}`, `tx: ${tx}`].join('\n'),
        }),
      })),
    )
    let next = 0
    let ok = 0
    const t0 = performance.now()
    await Promise.all(
      Array.from({ length: 16 }, async (_, w) => {
        for (let i = next++; i < bodies.length; i = next++) {
          const u = w % urls.length
          const r = await fetch(`${urls[u]}/api/marketplace/listings/${slug}/purchase`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', cookie: cookies[u]! },
            body: JSON.stringify(bodies[i]),
          })
          await r.arrayBuffer()
          if (r.status === 200) ok++
        }
      }),
    )
    const s = (performance.now() - t0) / 1000
    console.log(
      `purchases/s, ${label}: ${(ok / s).toFixed(0)}  (${ok} of ${PURCHASES} unlocked, 16 in flight)`,
    )
  }

  if (cluster) {
    const shared = await cluster.createDatabase('purchases_two')
    const [a, b] = await Promise.all([instance('a', shared), instance('b', shared)])
    await purchases('PostgreSQL, 2 processes on one database', [a, b])
    await purchases('PostgreSQL, 1 process', [
      await instance('c', await cluster.createDatabase('purchases_one')),
    ])
  }
  await purchases('LevelDB, 1 process', [await instance('d', null)])
} finally {
  for (const fn of teardowns.reverse()) await fn()
  await hello.close()
  await rm(work, { recursive: true, force: true })
}
