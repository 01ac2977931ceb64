// Listing sync against a real market on a real dev chain (anvil): offline first, then posted
// once with retries; Idempotency-Key makes repeated and concurrent posts one listing; a key the
// market refuses fails the listing for good; the device key is issued by SIWE + challenge.
import { join } from 'node:path'
import t from 'tap'
import { startDevChain } from '../../chain/dev.ts'
import { buildMarketApp } from '../../market/app.ts'
import { chainFromInfo, defaultConfig } from '../../market/config.ts'
import type { ListingRecord } from '../../market/store/records.ts'
import { main } from '../../cli/main.ts'
import { createListing } from '../../hub/listing/create.ts'
import { issueMarketKey } from '../../hub/listing/issue-key.ts'
import { postListing } from '../../hub/listing/post.ts'
import { loadEntry } from '../../hub/listing/queue.ts'
import { syncListings } from '../../hub/listing/sync.ts'
import { freePort } from '../helpers/ports.ts'
import { tempDir } from '../helpers/tmp.ts'
import { FIELDS, storeWith } from './fixtures.ts'

const silent = { info: () => undefined, warn: () => undefined }

t.test('listing sync with a real market', async (t) => {
  const dev = await startDevChain()
  t.teardown(() => dev.stop())
  const port = await freePort()
  const marketUrl = `http://127.0.0.1:${port}`
  const startMarket = async () => {
    const dir = await tempDir(t, 'svc-market-')
    const r = chainFromInfo({ ...defaultConfig(join(dir, 'data')), samples: false }, dev.info)
    if (!r.ok) throw new Error(r.error)
    const m = await buildMarketApp({ config: r.config })
    await m.app.listen({ host: '127.0.0.1', port })
    t.teardown(() => m.close())
    return m
  }
  const { store, home } = await storeWith(t, ['attested', 'attested', 'attested'])
  const created = await createListing({
    home,
    fields: FIELDS,
    range: {},
    market: marketUrl,
    store,
    agentId: dev.agentId,
  })
  if (!created.ok) throw new Error(created.error)
  const { dir } = created

  await t.test('offline: stays queued with the error and a later retry time', async (t) => {
    const s = await syncListings({
      home,
      key: async () => 'svc_' + 'a'.repeat(43),
      log: silent,
      backoffMinMs: 50,
    })
    t.equal(s.retrying, 1)
    const e = await loadEntry(dir)
    if (!e.ok) return t.fail(e.error)
    t.equal(e.entry.state, 'queued')
    t.equal(e.entry.attempts, 1)
    t.match(e.entry.lastError, /ECONNREFUSED/)
    t.ok(e.entry.nextAttemptAt !== null, 'next try scheduled')
    const again = await syncListings({
      home,
      key: async () => 'svc_' + 'a'.repeat(43),
      log: silent,
      now: () => 0,
    })
    t.equal(again.retrying, 1, 'not retried before its time')
    t.equal(
      (await loadEntry(dir)).ok && ((await loadEntry(dir)) as { entry: { attempts: number } }).entry.attempts,
      1,
      'no attempt made',
    )
  })

  const market = await startMarket()
  const realListings = async () => {
    const out: ListingRecord[] = []
    for await (const l of market.ctx.db.listings.values()) if (!l.sample) out.push(l)
    return out
  }

  await t.test('a non-owner cannot get a key: 403 from the market', async (t) => {
    const r = await issueMarketKey(marketUrl, dev.accounts.buyer.privateKey, dev.agentId)
    t.match(r, { ok: false, code: 'UPSTREAM_FAILED', error: /key issue: market answered 403/ })
  })

  const issued = await issueMarketKey(marketUrl, dev.accounts.owner.privateKey, dev.agentId)
  if (!issued.ok) throw new Error(issued.error)
  t.match(issued.key, /^svc_/, 'the owner gets a svc_ key')

  await t.test('a key the market refuses: the listing fails for good, with the answer', async (t) => {
    const other = await createListing({
      home: join(home, 'other'),
      fields: FIELDS,
      range: {},
      market: marketUrl,
      store,
      agentId: dev.agentId,
    })
    if (!other.ok) return t.fail(other.error)
    const s = await syncListings(
      { home: join(home, 'other'), key: async () => 'svc_' + 'b'.repeat(43), log: silent },
      { force: true },
    )
    t.equal(s.failed, 1)
    const e = await loadEntry(other.dir)
    t.match(e, { ok: true, entry: { state: 'failed', lastError: /market answered 401/ } })
    t.equal((await realListings()).length, 0, 'nothing listed')
  })

  await t.test('online: posted once, absolute URL, then never posted again', async (t) => {
    const s = await syncListings({ home, key: async () => issued.key, log: silent }, { force: true })
    t.equal(s.posted.length, 1)
    const e = await loadEntry(dir)
    if (!e.ok) return t.fail(e.error)
    t.equal(e.entry.state, 'posted')
    t.match(e.entry.url, new RegExp(`^${marketUrl}/marketplace/[a-z0-9-]+$`))
    t.equal(e.entry.attempts, 2)
    const again = await syncListings({ home, key: async () => issued.key, log: silent }, { force: true })
    t.equal(again.posted.length, 0, 'a posted listing is not posted again')
    t.equal((await realListings()).length, 1, 'one listing on the market')
    const v = await fetch(`${marketUrl}/api/marketplace/listings/${e.entry.slug}/verify`, { method: 'POST' })
    t.equal(v.status, 200, 'the listing can be verified')
  })

  await t.test(
    'Idempotency-Key: a repeated post (lost answer) and concurrent posts are one listing',
    async (t) => {
      const e = await loadEntry(dir)
      if (!e.ok) return t.fail(e.error)
      const before = (await realListings()).length
      const replay = await postListing(dir, e.entry, issued.key)
      t.same(
        replay,
        { kind: 'posted', slug: e.entry.slug, url: e.entry.url },
        'the retry gets the first answer',
      )
      const fresh = { ...e.entry, id: 'concurrent-1' }
      const outs = await Promise.all([1, 2, 3].map(() => postListing(dir, fresh, issued.key)))
      const slugs = new Set(outs.map((o) => (o.kind === 'posted' ? o.slug : o.error)))
      t.equal(slugs.size, 1, 'three concurrent posts, one answer')
      t.equal((await realListings()).length, before + 1, 'one new listing only')
      const other = await postListing(dir, { ...e.entry, id: 'concurrent-2' }, issued.key)
      t.ok(other.kind === 'posted' && !slugs.has(other.slug), 'another key makes another listing')
    },
  )

  await t.test(
    'svc listing create with a stored key posts at once and prints the absolute URL',
    async (t) => {
      const cliHome = join(home, 'cli')
      const fx = await storeWith(t, ['attested', 'attested'])
      await fx.store.close() // the hub is not running: the CLI opens the store itself
      const io = (lines: string[], errs: string[]) => ({
        out: (s: string) => void lines.push(s),
        err: (s: string) => void errs.push(s),
        env: { ...process.env, SVC_HOME: fx.home },
        cwd: cliHome,
      })
      const out: string[] = []
      const err: string[] = []
      t.equal(await main(['key', 'set', issued.key, '--market', marketUrl], io(out, err)), 0, err.join('\n'))
      const before = (await realListings()).length
      const code = await main(
        [
          'listing',
          'create',
          '--title',
          'From the CLI',
          '--summary',
          'two lines',
          '--description',
          FIELDS.description,
          '--machine-type',
          'vending',
          '--license',
          'audit',
          '--price',
          '0.2',
          '--agent',
          dev.agentId,
        ],
        io(out, err),
      )
      t.equal(code, 0, err.join('\n'))
      t.match(out.at(-1), new RegExp(`^listed: ${marketUrl}/marketplace/from-the-cli-[a-z0-9]+$`))
      t.equal((await realListings()).length, before + 1)
      out.length = 0
      t.equal(await main(['listing', 'status'], io(out, err)), 0)
      t.match(out.join('\n'), /posted .* 2 rows {2}1 tries {2}From the CLI {2}http/)
    },
  )

  await t.test('a bad Idempotency-Key header is a 400 naming it, nothing listed', async (t) => {
    const before = (await realListings()).length
    for (const bad of ['', 'has space', 'x'.repeat(256)]) {
      const form = new FormData()
      form.set('title', 'x')
      const res = await fetch(`${marketUrl}/api/agent/listings`, {
        method: 'POST',
        headers: { authorization: `Bearer ${issued.key}`, 'idempotency-key': bad },
        body: form,
      })
      t.equal(res.status, 400, JSON.stringify(bad.slice(0, 12)))
      t.match(((await res.json()) as { error: string }).error, /^Idempotency-Key: /)
    }
    t.equal((await realListings()).length, before)
  })
})
