// A listing whose rows do not verify is not sold as if they did: the market keeps each listing's
// last verification (verify route or the background re-check), shows it in the listing API and
// on the pages, and refuses a purchase of a failed listing (409, nothing used up) unless the
// buyer says they saw the failure (acceptUnverified: true).
import t from 'tap'
import { type Hex, parseEther } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { publicClientFor, walletClientFor } from '../../chain/clients.ts'
import { startDevChain } from '../../chain/dev.ts'
import { marketPages } from '../../market/pages/index.ts'
import { writeRows } from './chain-rows.ts'
import { api, dataset, issueKey, postListing, signIn, startMarket } from './market-helpers.ts'

const dev = await startDevChain()
t.teardown(() => dev.stop())
const { url, market } = await startMarket(t, dev, undefined, { pages: marketPages })
const { owner, buyer, payout } = dev.accounts
const ownerCookie = await signIn(url, owner.privateKey)
const key = (await issueKey(url, ownerCookie, owner.privateKey, dev.agentId)).json.key as string
const fields = (title: string) => ({
  title,
  summary: 'rows for a verification test',
  description: 'Listed to test the last verification.',
  machineType: 'arm',
  license: 'commercial',
  priceNative: '0.01',
})

// Rows never requested on chain: they fail.
const bad = (await postListing(url, key, dataset(5, dev.agentId), { fields: fields('Rows not on chain') }))
  .json.slug as string
// Rows answered by the attestor: they pass.
const goodData = dataset(4, dev.agentId, 1)
await writeRows(
  dev,
  goodData.manifest.rows.map((r) => ({ requestHash: r.requestHash as Hex, paramsHash: r.paramsHash as Hex })),
)
const good = (await postListing(url, key, goodData, { fields: fields('Rows on chain') })).json.slug as string

const view = async (slug: string) =>
  (await api(url, `/api/marketplace/listings/${slug}`)).json.verification as Record<string, unknown>

t.test('before any check a listing is unchecked; samples are preview', async (t) => {
  t.match(await view(bad), { state: 'unchecked', block: null, checkedAt: null })
  const list = (await api(url, '/api/marketplace/listings?limit=100')).json.listings as {
    sample: boolean
    verification: { state: string }
  }[]
  t.ok(
    list.filter((l) => l.sample).every((l) => l.verification.state === 'preview'),
    'samples say preview',
  )
})

t.test('the background re-check records every listing, at a block, with the reason', async (t) => {
  const head = await publicClientFor(dev.rpcUrl).getBlockNumber()
  const pass = await market.reverifier.runOnce()
  t.match(pass, { checked: 2, failed: 1, unreachable: 0 })
  const b = await view(bad)
  t.match(b, { state: 'failed', reason: /^row 0: requestHash: unknown to the validation registry/ })
  t.ok(BigInt(b.block as string) >= head, 'the block the rows were read at')
  t.match(await view(good), { state: 'verified', reason: null })
})

t.test('the verify route refreshes the same record', async (t) => {
  const before = (await view(good)).checkedAt as string
  const r = await api(url, `/api/marketplace/listings/${good}/verify`, { method: 'POST' })
  t.equal(r.status, 200)
  t.equal(r.json.verified, true)
  const after = await view(good)
  t.equal(after.state, 'verified')
  t.ok((after.checkedAt as string) >= before, 'checked again')
})

t.test('pages show the verdict: badges on cards, the sentence and the warning on the listing', async (t) => {
  const browse = await (await fetch(`${url}/marketplace`)).text()
  t.match(browse, /class="tag v-failed"[^>]*>verification failed</)
  t.match(browse, /class="tag v-verified"[^>]*>verified</)
  const page = await (await fetch(`${url}/marketplace/${bad}`)).text()
  // Stored 0-based (`row 0: …`), shown numbered from 1 like the verify tables.
  t.match(page, /these rows did not verify: row 1: requestHash: unknown to the validation registry/)
  t.match(page, /id="accept-unverified"/, 'the buyer must tick the warning before paying')
  const okPage = await (await fetch(`${url}/marketplace/${good}`)).text()
  t.match(okPage, /Every row passed at block \d+/)
  t.notMatch(okPage, /accept-unverified/)
})

t.test(
  'purchase of a failed listing: 409 with the reason, nothing used; acceptUnverified buys it',
  async (t) => {
    const buyerCookie = await signIn(url, buyer.privateKey)
    const hash = await walletClientFor(dev.rpcUrl, buyer.privateKey).sendTransaction({
      to: payout.address,
      value: parseEther('0.01'),
    })
    await publicClientFor(dev.rpcUrl).waitForTransactionReceipt({ hash })
    const signature = await privateKeyToAccount(buyer.privateKey).signMessage({
      message: ['svc marketplace', 'Unlock', `listing: ${bad}`, `tx: ${hash}`].join('\n'),
    })
    const path = `/api/marketplace/listings/${bad}/purchase`
    const refused = await api(url, path, { body: { txHash: hash, signature }, cookie: buyerCookie })
    t.equal(refused.status, 409)
    t.match(
      refused.json.error,
      /failed its last verification \(block \d+, .*: 5 of 5 rows failed; row 0: .*acceptUnverified: true/,
    )
    const bought = await api(url, path, {
      body: { txHash: hash, signature, acceptUnverified: true },
      cookie: buyerCookie,
    })
    t.equal(bought.status, 200, 'the same payment still buys it: the refusal used nothing')
    t.ok(bought.json.access, 'access granted')
  },
)
