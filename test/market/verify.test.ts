// POST /api/marketplace/listings/{slug}/verify against real registry rows on anvil: the five
// conditions, unknown hashes, sample listings without chain reads, batching, an unreachable chain.
import { createServer } from 'node:http'
import t from 'tap'
import { anvilAccount } from '../../chain/accounts.ts'
import { publicClientFor, walletClientFor } from '../../chain/clients.ts'
import { registerAgent } from '../../chain/deploy.ts'
import { startDevChain } from '../../chain/dev.ts'
import { lineHash } from '../../records/index.ts'
import { freePort } from '../helpers/ports.ts'
import { writeRows } from './chain-rows.ts'
import { api, dataset, issueKey, postListing, signIn, startMarket } from './market-helpers.ts'

const dev = await startDevChain()
t.teardown(() => dev.stop())

// A counting pass-through in front of anvil: how many HTTP requests did verify make?
// With `refuseOverrides`, it answers eth_call with a state override the way RPCs without override
// support do, to exercise the fallback to plain JSON-RPC batches.
let rpcRequests = 0
let refuseOverrides = false
const proxyPort = await freePort()
const proxy = createServer((req, res) => {
  rpcRequests++
  const chunks: Buffer[] = []
  req.on('data', (c: Buffer) => chunks.push(c))
  req.on('end', async () => {
    const body = Buffer.concat(chunks)
    const msg = JSON.parse(body.toString()) as
      | { id: number; method: string; params: unknown[] }
      | { id: number; method: string; params: unknown[] }[]
    const one = Array.isArray(msg) ? null : msg
    if (refuseOverrides && one && one.method === 'eth_call' && one.params.length > 2) {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(
        JSON.stringify({
          jsonrpc: '2.0',
          id: one.id,
          error: { code: -32602, message: 'state override not supported' },
        }),
      )
      return
    }
    const r = await fetch(dev.rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    })
    res.writeHead(r.status, { 'content-type': 'application/json' })
    res.end(Buffer.from(await r.arrayBuffer()))
  })
})
await new Promise<void>((r) => proxy.listen(proxyPort, '127.0.0.1', r))
t.teardown(() => new Promise<void>((r) => proxy.close(() => r())))

let chainCalls = 0
const { url } = await startMarket(t, dev, undefined, {
  info: { rpcUrl: `http://127.0.0.1:${proxyPort}` },
  wrapChain: (c) => ({
    ...c,
    validationStatuses: (h) => {
      chainCalls++
      return c.validationStatuses(h)
    },
  }),
})
const cookie = await signIn(url, dev.accounts.owner.privateKey)
const key = (await issueKey(url, cookie, dev.accounts.owner.privateKey, dev.agentId)).json.key as string

t.test('all rows attested: every row passes; the first eight are shown', async (t) => {
  const ds = dataset(300, dev.agentId)
  await writeRows(
    dev,
    ds.manifest.rows.map((r) => ({ requestHash: r.requestHash, paramsHash: r.paramsHash })),
  )
  const l = await postListing(url, key, ds)
  t.equal(l.status, 201)
  const before = rpcRequests
  const v = await api(url, `/api/marketplace/listings/${l.json.slug}/verify`, { method: 'POST' })
  const used = rpcRequests - before
  t.equal(v.status, 200)
  t.equal(v.json.preview, false)
  t.equal(v.json.total, 300)
  t.equal(v.json.passed, 300)
  t.equal(v.json.failed, 0)
  t.equal(v.json.verified, true)
  const rows = v.json.rows as { index: number; paramsHash: string; requestHash: string; pass: boolean }[]
  t.equal(rows.length, 8)
  t.same(
    rows.map((r) => r.index),
    [0, 1, 2, 3, 4, 5, 6, 7],
  )
  t.equal(rows[3]!.paramsHash, ds.manifest.rows[3]!.paramsHash)
  t.equal(rows[3]!.requestHash, ds.manifest.rows[3]!.requestHash)
  t.ok(rows.every((r) => r.pass))
  t.ok(used < 10, `300 rows read in ${used} HTTP requests (batched, never one per row)`)
})

t.test(
  'each failing condition is a failed row with its reason; an unknown hash is a failed row, not a 500',
  async (t) => {
    // An agent the device itself owns, so the device may request validations for it.
    const otherAgent = await registerAgent(
      walletClientFor(dev.rpcUrl, dev.accounts.device.privateKey),
      publicClientFor(dev.rpcUrl),
      dev.identityRegistry,
      'svc://agents/other',
    )
    const ds = dataset(8, dev.agentId)
    const r = ds.manifest.rows
    const otherValidator = anvilAccount(8)
    await writeRows(dev, [
      { requestHash: r[0]!.requestHash, paramsHash: r[0]!.paramsHash },
      { requestHash: r[1]!.requestHash, paramsHash: r[1]!.paramsHash, agentId: otherAgent },
      {
        requestHash: r[2]!.requestHash,
        paramsHash: r[2]!.paramsHash,
        validatorKey: otherValidator.privateKey,
      },
      { requestHash: r[3]!.requestHash, paramsHash: r[3]!.paramsHash, response: 99 },
      { requestHash: r[4]!.requestHash, paramsHash: lineHash('another line') },
      { requestHash: r[5]!.requestHash, paramsHash: r[5]!.paramsHash, tag: 'other-tag' },
      // r[6]: never requested: unknown to the registry
      { requestHash: r[7]!.requestHash, paramsHash: r[7]!.paramsHash, tag: '' },
    ])
    const l = await postListing(url, key, ds)
    const v = await api(url, `/api/marketplace/listings/${l.json.slug}/verify`, { method: 'POST' })
    t.equal(v.status, 200)
    t.equal(v.json.verified, false)
    t.equal(v.json.passed, 2)
    t.equal(v.json.failed, 6)
    const rows = v.json.rows as { pass: boolean; reason?: string }[]
    t.equal(rows[0]!.pass, true)
    t.notOk('reason' in rows[0]!)
    t.match(rows[1]!.reason, /^condition 1: agent/)
    t.match(rows[2]!.reason, /^condition 2: validator/)
    t.match(rows[3]!.reason, /^condition 3: response: 99/)
    t.match(rows[4]!.reason, /^condition 4: responseHash/)
    t.match(rows[5]!.reason, /^condition 5: tag: "other-tag"/)
    t.match(rows[6]!.reason, /requestHash: unknown to the validation registry/)
    t.equal(rows[7]!.pass, true, 'an empty tag passes (condition 5 applies only when set)')
    t.same(
      (v.json.failures as { index: number }[]).map((f) => f.index),
      [1, 2, 3, 4, 5, 6],
    )
  },
)

t.test('a request without a response fails condition 3', async (t) => {
  const ds = dataset(1, dev.agentId)
  await writeRows(dev, [
    { requestHash: ds.requestHashes[0]!, paramsHash: ds.manifest.rows[0]!.paramsHash, respond: false },
  ])
  const l = await postListing(url, key, ds)
  const v = await api(url, `/api/marketplace/listings/${l.json.slug}/verify`, { method: 'POST' })
  t.match((v.json.rows as { reason: string }[])[0]!.reason, /condition 3/)
})

t.test('an RPC without state overrides: verify falls back to JSON-RPC batches, same verdicts', async (t) => {
  const ds = dataset(40, dev.agentId)
  await writeRows(
    dev,
    ds.manifest.rows.slice(0, 39).map((r) => ({ requestHash: r.requestHash, paramsHash: r.paramsHash })),
  )
  const l = await postListing(url, key, ds)
  const withOverride = await api(url, `/api/marketplace/listings/${l.json.slug}/verify`, { method: 'POST' })
  refuseOverrides = true
  t.teardown(() => {
    refuseOverrides = false
  })
  const other = await startMarket(t, dev, undefined, { info: { rpcUrl: `http://127.0.0.1:${proxyPort}` } })
  const c2 = await signIn(other.url, dev.accounts.owner.privateKey)
  const k2 = (await issueKey(other.url, c2, dev.accounts.owner.privateKey, dev.agentId)).json.key as string
  const l2 = await postListing(other.url, k2, ds)
  const fallback = await api(other.url, `/api/marketplace/listings/${l2.json.slug}/verify`, {
    method: 'POST',
  })
  t.equal(fallback.status, 200)
  t.equal(withOverride.json.passed, 39)
  t.equal(fallback.json.passed, 39)
  t.equal(fallback.json.failed, 1)
  t.same(fallback.json.failures, withOverride.json.failures, 'same verdicts either way')
})

t.test('sample listings answer preview without chain reads', async (t) => {
  const before = chainCalls
  const v = await api(url, '/api/marketplace/listings/sample-vending-sales/verify', { method: 'POST' })
  t.equal(v.status, 200)
  t.equal(v.json.preview, true)
  t.equal(v.json.total, 40)
  t.equal((v.json.rows as unknown[]).length, 8)
  t.notOk('passed' in v.json, 'no pass/fail claimed for a sample')
  t.equal(chainCalls, before, 'no chain read')
})

t.test('unknown slug, bad slug', async (t) => {
  const v = await api(url, '/api/marketplace/listings/no-such-thing/verify', { method: 'POST' })
  t.equal(v.status, 404)
  t.match(v.json.error, /not found/)
  const b = await api(url, '/api/marketplace/listings/Bad%20Slug/verify', { method: 'POST' })
  t.equal(b.status, 400)
  t.match(b.json.error, /slug/)
})

t.test('an unreachable chain answers 502 for verify and for listing', async (t) => {
  const good = await startMarket(t, dev)
  const c = await signIn(good.url, dev.accounts.owner.privateKey)
  const k = (await issueKey(good.url, c, dev.accounts.owner.privateKey, dev.agentId)).json.key as string
  const l = await postListing(good.url, k, dataset(2, dev.agentId))
  t.equal(l.status, 201)
  // The same data dir cannot be opened twice; a second market on a dead RPC shows the 502 path.
  const dead = await startMarket(t, dev, undefined, {
    info: { rpcUrl: `http://127.0.0.1:${await freePort()}` },
  })
  const v = await api(dead.url, '/api/marketplace/listings/sample-arm-picks/verify', { method: 'POST' })
  t.equal(v.status, 200, 'samples need no chain')
  const deadCookie = await signIn(dead.url, dev.accounts.owner.privateKey)
  const ch = await api(dead.url, '/api/marketplace/challenges', {
    body: { kind: 'key', agentId: '0', wallet: dev.accounts.owner.address },
    cookie: deadCookie,
  })
  const { privateKeyToAccount } = await import('viem/accounts')
  const sig = await privateKeyToAccount(dev.accounts.owner.privateKey).signMessage({
    message: ch.json.message as string,
  })
  const kr = await api(dead.url, '/api/marketplace/keys', {
    body: { challengeId: ch.json.id, signature: sig },
    cookie: deadCookie,
  })
  t.equal(kr.status, 502)
  t.match(kr.json.error, /chain unreachable/)
  // Plant a listing in the dead market's store (its chain is unreachable, so it cannot take one).
  const rec = (await good.market.ctx.db.listings.get(l.json.slug as string))!
  await dead.market.ctx.db.listings.put(rec.slug, rec)
  const m = await good.market.ctx.blocks.get((await import('multiformats/cid')).CID.parse(rec.manifestCid))
  await dead.market.ctx.blocks.put((await import('multiformats/cid')).CID.parse(rec.manifestCid), m)
  const dv = await api(dead.url, `/api/marketplace/listings/${rec.slug}/verify`, { method: 'POST' })
  t.equal(dv.status, 502)
  t.match(dv.json.error, /chain unreachable/)
})
