// POST …/purchase and GET …/file against real payments on anvil: every rejection (unconfirmed,
// other sender, other recipient, below price, reused, reverted), and 100 concurrent purchases
// with one transaction hash giving exactly one 200.
import t from 'tap'
import { type Hex, parseEther } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { anvilAccount } from '../../chain/accounts.ts'
import { publicClientFor, walletClientFor } from '../../chain/clients.ts'
import { startDevChain } from '../../chain/dev.ts'
import { api, dataset, issueKey, postListing, signIn, startMarket } from './market-helpers.ts'

const dev = await startDevChain()
t.teardown(() => dev.stop())
const { url, market } = await startMarket(t, dev)
const pub = publicClientFor(dev.rpcUrl)
const { owner, buyer, payout } = dev.accounts
const ownerCookie = await signIn(url, owner.privateKey)
const key = (await issueKey(url, ownerCookie, owner.privateKey, dev.agentId)).json.key as string
const ds = dataset(12, dev.agentId)
const listing = await postListing(url, key, ds, {
  fields: {
    title: 'Paid dataset',
    summary: 'for sale',
    description: 'A dataset that costs 0.05 native units.',
    machineType: 'arm',
    license: 'commercial',
    priceNative: '0.05',
  },
})
const slug = listing.json.slug as string
const price = parseEther('0.05')
const buyerCookie = await signIn(url, buyer.privateKey)
const buyerAcc = privateKeyToAccount(buyer.privateKey)

async function pay(fromKey: Hex, to: Hex, value: bigint): Promise<Hex> {
  const hash = await walletClientFor(dev.rpcUrl, fromKey).sendTransaction({ to, value })
  await pub.waitForTransactionReceipt({ hash })
  return hash
}
const unlock = (s: string, tx: string) =>
  ['svc marketplace', 'Unlock', `listing: ${s}`, `tx: ${tx}`].join('\n')
async function purchase(txHash: Hex, opts: { signer?: Hex; cookie?: string; slug?: string } = {}) {
  const s = opts.slug ?? slug
  const signature = await privateKeyToAccount(opts.signer ?? buyer.privateKey).signMessage({
    message: unlock(s, txHash),
  })
  return api(url, `/api/marketplace/listings/${s}/purchase`, {
    body: { txHash, signature },
    cookie: opts.cookie ?? buyerCookie,
  })
}

t.test('files are closed to a buyer who has not paid', async (t) => {
  const r = await api(url, `/api/marketplace/listings/${slug}/file?part=data`, { cookie: buyerCookie })
  t.equal(r.status, 403)
  t.match(r.json.error, /only its owner or a buyer/)
})

t.test('a good purchase: access with CIDs and URLs; the files download byte for byte', async (t) => {
  const tx = await pay(buyer.privateKey, payout.address, price)
  const r = await purchase(tx)
  t.equal(r.status, 200, JSON.stringify(r.json))
  const access = r.json.access as Record<string, string>
  const stored = (await market.ctx.db.listings.get(slug))!
  t.same(access, {
    dataCid: stored.dataCid,
    manifestCid: stored.manifestCid,
    dataUrl: `/api/marketplace/listings/${slug}/file?part=data`,
    manifestUrl: `/api/marketplace/listings/${slug}/file?part=manifest`,
  })
  const data = await fetch(url + access.dataUrl, { headers: { cookie: buyerCookie } })
  t.equal(data.status, 200)
  t.match(data.headers.get('content-disposition'), /attachment/)
  t.equal(await data.text(), ds.data)
  const man = await fetch(url + access.manifestUrl, { headers: { cookie: buyerCookie } })
  t.same(JSON.parse(await man.text()), ds.manifest)
  const reused = await purchase(tx)
  t.equal(reused.status, 409, 'the same hash cannot buy twice')
  t.match(reused.json.error, /already used/)
})

t.test('file route: part required, owner allowed, others refused', async (t) => {
  let r = await api(url, `/api/marketplace/listings/${slug}/file`, { cookie: ownerCookie })
  t.equal(r.status, 400)
  t.match(r.json.error, /part: required/)
  r = await api(url, `/api/marketplace/listings/${slug}/file?part=image`, { cookie: ownerCookie })
  t.equal(r.status, 400)
  t.match(r.json.error, /part: must be "data" or "manifest"/)
  r = await api(url, `/api/marketplace/listings/${slug}/file?part=data`, { cookie: ownerCookie })
  t.equal(r.status, 200, 'the owner downloads')
  t.equal(r.text, ds.data)
  r = await api(url, `/api/marketplace/listings/${slug}/file?part=data`)
  t.equal(r.status, 401)
  const stranger = await signIn(url, anvilAccount(9).privateKey)
  r = await api(url, `/api/marketplace/listings/${slug}/file?part=manifest`, { cookie: stranger })
  t.equal(r.status, 403)
  r = await api(url, `/api/marketplace/listings/nothing-here/file?part=data`, { cookie: ownerCookie })
  t.equal(r.status, 404)
})

t.test('rejections: other sender, other recipient, below price, reverted, unknown', async (t) => {
  const other = anvilAccount(8)
  let r = await purchase(await pay(other.privateKey, payout.address, price))
  t.equal(r.status, 403)
  t.match(r.json.error, /sent from .* not from the signer/)
  r = await purchase(await pay(buyer.privateKey, owner.address, price))
  t.equal(r.status, 402)
  t.match(r.json.error, /not the listing's payout address/)
  r = await purchase(await pay(buyer.privateKey, payout.address, price - 1n))
  t.equal(r.status, 402)
  t.match(r.json.error, /value 49999999999999999 wei is below the price 50000000000000000 wei/)
  const exact = await purchase(await pay(buyer.privateKey, payout.address, price))
  t.equal(exact.status, 200, 'exactly the price is enough')
  // A reverted transaction: a call the registry refuses, mined with explicit gas.
  const w = walletClientFor(dev.rpcUrl, buyer.privateKey)
  const reverted = await w.sendTransaction({ to: dev.validationRegistry, data: '0xdeadbeef', gas: 100_000n })
  const rc = await pub.waitForTransactionReceipt({ hash: reverted })
  t.equal(rc.status, 'reverted')
  r = await purchase(reverted)
  t.equal(r.status, 402)
  t.match(r.json.error, /reverted/)
  r = await purchase(`0x${'ab'.repeat(32)}`)
  t.equal(r.status, 404)
  t.match(r.json.error, /not found on chain 10143/)
})

t.test('unconfirmed: a pending transaction is refused, then accepted once mined', async (t) => {
  await pub.request({ method: 'evm_setAutomine' as never, params: [false] as never })
  let tx: Hex
  try {
    tx = await walletClientFor(dev.rpcUrl, buyer.privateKey).sendTransaction({
      to: payout.address,
      value: price,
      gas: 21_000n,
    })
    const r = await purchase(tx)
    t.equal(r.status, 409)
    t.match(r.json.error, /not confirmed yet/)
  } finally {
    await pub.request({ method: 'evm_mine' as never, params: [] as never })
    await pub.request({ method: 'evm_setAutomine' as never, params: [true] as never })
  }
  const ok = await purchase(tx)
  t.equal(ok.status, 200, 'the refusal changed nothing')
})

t.test('signature and session rejections', async (t) => {
  const tx = await pay(buyer.privateKey, payout.address, price)
  let r = await purchase(tx, { signer: anvilAccount(8).privateKey })
  t.equal(r.status, 403)
  t.match(r.json.error, /not by the signed-in account/)
  const wrongSlug = await buyerAcc.signMessage({ message: unlock('another-listing', tx) })
  r = await api(url, `/api/marketplace/listings/${slug}/purchase`, {
    body: { txHash: tx, signature: wrongSlug },
    cookie: buyerCookie,
  })
  t.equal(r.status, 403, 'a signature over another listing recovers another address')
  r = await api(url, `/api/marketplace/listings/${slug}/purchase`, {
    body: { txHash: tx, signature: '0x12' },
    cookie: buyerCookie,
  })
  t.equal(r.status, 400)
  t.match(r.json.error, /signature/)
  r = await api(url, `/api/marketplace/listings/${slug}/purchase`, {
    body: { txHash: '0x1234', signature: '0x12' },
    cookie: buyerCookie,
  })
  t.equal(r.status, 400)
  t.match(r.json.error, /txHash/)
  r = await api(url, `/api/marketplace/listings/${slug}/purchase`, {
    body: { txHash: tx, signature: await buyerAcc.signMessage({ message: unlock(slug, tx) }) },
  })
  t.equal(r.status, 401)
  r = await api(url, `/api/marketplace/listings/${slug}/purchase`, {
    body: { txHash: tx, signature: await buyerAcc.signMessage({ message: unlock(slug, tx) }) },
    cookie: buyerCookie,
    headers: { origin: 'https://evil.example' },
  })
  t.equal(r.status, 403)
  t.match(r.json.error, /cross-site/)
  r = await purchase(tx, { slug: 'sample-arm-picks' })
  t.equal(r.status, 400)
  t.match(r.json.error, /sample/)
  r = await purchase(tx, { slug: 'no-such-listing' })
  t.equal(r.status, 404)
  r = await purchase(tx)
  t.equal(r.status, 200, 'after all those refusals the hash is still unused')
})

t.test('100 concurrent purchases with one transaction hash: exactly one 200', async (t) => {
  const tx = await pay(buyer.privateKey, payout.address, price)
  const signature = await buyerAcc.signMessage({ message: unlock(slug, tx) })
  const all = await Promise.all(
    Array.from({ length: 100 }, () =>
      api(url, `/api/marketplace/listings/${slug}/purchase`, {
        body: { txHash: tx, signature },
        cookie: buyerCookie,
      }),
    ),
  )
  const statuses = all.map((r) => r.status)
  t.equal(statuses.filter((s) => s === 200).length, 1, 'exactly one success')
  t.equal(statuses.filter((s) => s === 409).length, 99, 'the rest: already used')
  t.ok(await market.ctx.db.usedTx.get(tx.toLowerCase()))
})
