// The market store's contract, on both engines (LevelDB in a temp folder, PostgreSQL in a
// throwaway cluster): browse pages against a plain filter-and-sort of the same listings, walked
// forward and backward by cursor and by offset; counters after overwrites; an agent's listings;
// the once-only steps under 100 concurrent callers (on PostgreSQL also from two stores on one
// database, with no in-process lock anywhere); unknown listing fields kept; migrations applied
// once; an old LevelDB data dir indexed at open.
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { Level } from 'level'
import { LICENSES, MACHINE_TYPES } from '../../records/listing-fields.ts'
import { parseMarketConfig } from '../../market/config.ts'
import { openLevelStore } from '../../market/store/leveldb.ts'
import { migrate } from '../../market/store/migrate.ts'
import { openPgStore } from '../../market/store/postgres.ts'
import type { KeyRecord, ListingRecord } from '../../market/store/records.ts'
import type { BrowseQuery, Cursor, MarketStore, Sort } from '../../market/store/store.ts'
import { freePort } from '../helpers/ports.ts'
import { postgresMissing } from '../helpers/postgres.ts'
import { tempDir } from '../helpers/tmp.ts'
import { testStoreUrl } from './store-engine.ts'
import pg from 'pg'

const WORDS = ['gear', 'vend', 'arm', 'zebra', 'night', 'dock', 'pallet', 'snack', 'cold', 'lift']
const DAY = 86_400_000

/** A deterministic pseudo-random sequence, so a failure can be replayed. */
function rng(seed: number) {
  let s = seed >>> 0
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0
    return s / 2 ** 32
  }
}

function makeListings(n: number, seed: number): ListingRecord[] {
  const r = rng(seed)
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!
  const base = 1_760_000_000_000
  return Array.from({ length: n }, (_, i) => {
    const title = `${pick(WORDS)} ${pick(WORDS)}, run ${i}`
    return {
      slug: `l-${String(i).padStart(4, '0')}-${Math.floor(r() * 1e6).toString(36)}`,
      title,
      summary: `${pick(WORDS)} readings`,
      description: 'd',
      machineType: pick(MACHINE_TYPES),
      license: pick(LICENSES),
      priceNative: '0',
      // Few distinct prices, dates and row counts, so ties (broken by slug) are common.
      priceWei: String(BigInt(Math.floor(r() * 6)) * 10n ** 17n),
      payout: '0x0000000000000000000000000000000000000001',
      agentId: String(Math.floor(r() * 3)),
      keyId: 'k',
      ownerWallet: '',
      ownerAccount: '',
      dataCid: 'c',
      manifestCid: 'c',
      imageCid: null,
      imageType: null,
      rows: 1 + Math.floor(r() * 5),
      dataBytes: 10,
      status: 'listed' as const,
      sample: r() < 0.1,
      createdAt: base + Math.floor(r() * 8) * DAY + Math.floor(r() * 3),
    }
  })
}

/** What a browse must answer: the listings filtered and sorted the plain way. */
function reference(all: ListingRecord[], q: BrowseQuery): ListingRecord[] {
  const ws = (l: ListingRecord) => `${l.title} ${l.summary}`.toLowerCase().split(/[^a-z0-9]+/)
  const v = (l: ListingRecord) =>
    q.sort === 'newest' ? l.createdAt : q.sort === 'price' ? l.priceWei : l.rows
  return all
    .filter(
      (l) =>
        (!q.machineType || l.machineType === q.machineType) &&
        (!q.license || l.license === q.license) &&
        (q.minWei === undefined || BigInt(l.priceWei) >= q.minWei) &&
        (q.maxWei === undefined || BigInt(l.priceWei) <= q.maxWei) &&
        q.words.every((w) => ws(l).includes(w)),
    )
    .sort((a, b) => {
      let d: number
      if (q.sort === 'price') d = BigInt(v(a)) < BigInt(v(b)) ? -1 : BigInt(v(a)) > BigInt(v(b)) ? 1 : 0
      else d = Number(v(b)) - Number(v(a))
      return d || (a.slug < b.slug ? -1 : 1)
    })
}

const QUERIES: Omit<BrowseQuery, 'limit'>[] = [
  { words: [], sort: 'newest' },
  { words: [], sort: 'price' },
  { words: [], sort: 'rows' },
  { words: [], sort: 'newest', machineType: 'arm' },
  { words: [], sort: 'price', license: 'research' },
  { words: [], sort: 'rows', machineType: 'vending', license: 'commercial' },
  { words: [], sort: 'newest', minWei: 2n * 10n ** 17n, maxWei: 4n * 10n ** 17n },
  { words: [], sort: 'price', minWei: 10n ** 17n },
  { words: [], sort: 'rows', maxWei: 3n * 10n ** 17n, machineType: 'arm' },
  { words: ['zebra'], sort: 'newest' },
  { words: ['gear', 'readings'], sort: 'price' },
  { words: ['snack', 'cold'], sort: 'rows', license: 'audit' },
  { words: ['dock'], sort: 'newest', minWei: 10n ** 17n, maxWei: 3n * 10n ** 17n },
  { words: ['nosuchword'], sort: 'newest' },
]

const describe = (q: Omit<BrowseQuery, 'limit'>) =>
  JSON.stringify(q, (_k, v) => (typeof v === 'bigint' ? v.toString() : v))

async function contract(t: Test, open: () => Promise<MarketStore>) {
  const store = await open()
  t.teardown(() => store.close())
  const all = makeListings(160, 17)
  // Half in one step (imports), half one by one, as devices list them.
  await store.putListings(all.slice(0, 80))
  for (const l of all.slice(80)) await store.listings.put(l.slug, l)

  t.test('browse: every page, forward and backward, equals the plain answer', async (t) => {
    for (const q0 of QUERIES) {
      const want = reference(all, { ...q0, limit: 0 }).map((l) => l.slug)
      const seen: string[] = []
      let after: Cursor | undefined
      const totals = new Set<number>()
      let last: Awaited<ReturnType<MarketStore['browse']>> | undefined
      for (let guard = 0; guard < 100; guard++) {
        const p = await store.browse({ ...q0, limit: 7, ...(after ? { after } : {}) })
        totals.add(p.total)
        if (!after) t.equal(p.prev, null, `the first page has no previous page: ${describe(q0)}`)
        seen.push(...p.listings.map((l) => l.slug))
        last = p
        if (!p.next) break
        after = p.next
      }
      t.same([...totals], [want.length], `total on every page: ${describe(q0)}`)
      t.same(seen, want, `forward by cursor: ${describe(q0)}`)
      // Backward from the last page by `before` cursors.
      const back: string[] = [...(last?.listings.map((l) => l.slug) ?? [])]
      let before = last?.prev ?? null
      for (let guard = 0; before && guard < 100; guard++) {
        const p = await store.browse({ ...q0, limit: 7, before })
        back.unshift(...p.listings.map((l) => l.slug))
        before = p.prev
      }
      t.same(back, want, `backward by cursor: ${describe(q0)}`)
      const off = await store.browse({ ...q0, limit: 5, offset: 6 })
      t.same(
        off.listings.map((l) => l.slug),
        want.slice(6, 11),
        `offset: ${describe(q0)}`,
      )
    }
  })

  t.test('an overwritten listing moves in every index and count', async (t) => {
    const l = all.find((x) => x.machineType !== 'drone' && !x.sample)!
    const moved = {
      ...l,
      machineType: 'drone' as const,
      priceWei: '900000000000000000',
      title: 'walrus tusk',
    }
    await store.listings.put(moved.slug, moved)
    const i = all.indexOf(l)
    all[i] = moved
    for (const q0 of [
      { words: [], sort: 'newest' as Sort, machineType: 'drone' },
      { words: [], sort: 'newest' as Sort, machineType: l.machineType },
      { words: ['walrus'], sort: 'price' as Sort },
      { words: [l.title.split(' ')[0]!], sort: 'newest' as Sort },
      { words: [], sort: 'price' as Sort, minWei: 8n * 10n ** 17n },
    ]) {
      const want = reference(all, { ...q0, limit: 0 })
      const p = await store.browse({ ...q0, limit: 100 })
      t.equal(p.total, want.length, `total: ${describe(q0)}`)
      t.same(
        p.listings.map((x) => x.slug),
        want.map((x) => x.slug),
        describe(q0),
      )
    }
  })

  t.test("an agent's listings and counts, samples left out", async (t) => {
    const mine = all
      .filter((l) => l.agentId === '1' && !l.sample)
      .sort((a, b) => b.createdAt - a.createdAt || (a.slug < b.slug ? -1 : 1))
    const seen: string[] = []
    let after: Cursor | undefined
    for (let guard = 0; guard < 100; guard++) {
      const p = await store.agentListings('1', 9, after)
      seen.push(...p.listings.map((l) => l.slug))
      if (!p.next) break
      after = p.next
    }
    t.same(
      seen,
      mine.map((l) => l.slug),
    )
    const since = Math.max(...mine.map((l) => l.createdAt)) - 3 * DAY
    const s = await store.agentStats('1', since)
    t.equal(s.listings, mine.length)
    t.equal(
      s.rows,
      mine.reduce((n, l) => n + l.rows, 0),
    )
    t.same(
      s.recent.map((r) => r.createdAt).sort(),
      mine
        .filter((l) => l.createdAt >= since)
        .map((l) => l.createdAt)
        .sort(),
    )
    t.equal(s.firstAt, Math.min(...mine.map((l) => l.createdAt)), 'the oldest listing')
    t.equal(s.lastAt, Math.max(...mine.map((l) => l.createdAt)), 'the newest listing')
    t.same(await store.agentStats('99', 0), { listings: 0, rows: 0, recent: [], firstAt: null, lastAt: null })
  })

  t.test('a listing keeps fields the store does not know', async (t) => {
    const l = { ...makeListings(1, 99)[0]!, slug: 'extra-fields', colour: 'red', nested: { a: [1, 2] } }
    await store.listings.put(l.slug, l)
    t.same(await store.listings.get(l.slug), l)
    const p = await store.browse({ words: ['run'], sort: 'newest', limit: 100 })
    t.same(
      p.listings.find((x) => x.slug === 'extra-fields'),
      l,
    )
  })

  t.test("a buyer's purchases, newest first, nobody else's", async (t) => {
    const buy = (tx: string, slug: string, buyer: string, at: number) =>
      store.recordPurchase({ txHash: tx, slug, buyer, at }, { slug, buyer, txHash: tx, at, block: '7' })
    await buy('0xp1', 'a', '0xbuyer', 1000)
    await buy('0xp2', 'b', '0xother', 2000)
    await buy('0xp3', 'c', '0xbuyer', 3000)
    await buy('0xp4', 'd', '0xbuyer', 2000)
    t.same(
      (await store.purchasesOf('0xbuyer')).map((p) => `${p.slug}@${p.at}`),
      ['c@3000', 'd@2000', 'a@1000'],
    )
    t.equal((await store.purchasesOf('0xbuyer'))[0]!.block, '7', 'the receipt fields come back')
    t.same(await store.purchasesOf('0xnobody'), [])
  })

  t.test('once-only steps: of 100 concurrent callers exactly one wins', async (t) => {
    const now = Date.now()
    await store.nonces.put('n1', { nonce: 'n1', expiresAt: now + 60_000 })
    const n = await Promise.all(Array.from({ length: 100 }, () => store.consumeNonce('n1', now)))
    t.equal(n.filter(Boolean).length, 1, 'nonce')
    await store.nonces.put('n2', { nonce: 'n2', expiresAt: now - 1 })
    t.equal(await store.consumeNonce('n2', now), false, 'an expired nonce is refused')
    t.equal(await store.consumeNonce('never', now), false, 'an unknown nonce is refused')

    await store.challenges.put('c1', {
      id: 'c1',
      kind: 'key',
      account: '0xa',
      agentId: '0',
      wallet: '0xb',
      message: 'm',
      expiresAt: now + 60_000,
      usedAt: null,
    })
    const key = (i: number): KeyRecord => ({
      id: `key${i}`,
      hash: `hash${i}`,
      prefix: 'p',
      agentId: '0',
      wallet: '0xb',
      account: '0xa',
      device: null,
      createdAt: now + i,
      revokedAt: null,
      revokedReason: null,
    })
    const c = await Promise.all(Array.from({ length: 100 }, (_, i) => store.useChallenge('c1', now, key(i))))
    t.equal(c.filter(Boolean).length, 1, 'challenge')
    const winner = c.indexOf(true)
    t.equal((await store.challenges.get('c1'))!.usedAt, now)
    t.equal(await store.keyHashes.get(`hash${winner}`), `key${winner}`)
    t.same(
      (await store.keysOf('0xa')).map((k) => k.id),
      [`key${winner}`],
      'only the winner stored a key',
    )
    t.same(
      (await store.keysOf('0xb')).map((k) => k.id),
      [`key${winner}`],
      'found by wallet too',
    )

    const p = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        store.recordPurchase(
          { txHash: '0xt', slug: 's', buyer: `0x${i}`, at: now },
          { slug: 's', buyer: `0x${i}`, txHash: '0xt', at: now },
        ),
      ),
    )
    t.equal(p.filter(Boolean).length, 1, 'transaction hash')
    const buyer = (await store.usedTx.get('0xt'))!.buyer
    t.ok(await store.purchases.get(`s!${buyer}`), "the winner's purchase is recorded")
    t.notOk(await store.purchases.get(`s!${buyer === '0x0' ? '0x1' : '0x0'}`), 'no other purchase')

    const recs = makeListings(20, 5).map((l, i) => ({ ...l, slug: `idem-${i}` }))
    const bodies = await Promise.all(
      recs.map((r) => store.createListing(r, { slot: 'key1!retry', body: { slug: r.slug } })),
    )
    t.equal(new Set(bodies.map((b) => b!.slug)).size, 1, 'every retry answers the first body')
    const created = bodies[0]!.slug
    t.ok(await store.listings.get(created))
    t.equal((await store.browse({ words: ['run'], sort: 'newest', limit: 100, offset: 0 })).total >= 1, true)
    let stored = 0
    for (const r of recs) if (await store.listings.get(r.slug)) stored++
    t.equal(stored, 1, 'one listing stored for the slot')
    t.same(await store.idempotent('key1!retry'), { slug: created })
  })

  t.test("an agent's active keys, whoever holds them; a revoked key leaves the index", async (t) => {
    const now = Date.now()
    const key = (id: string, agentId: string, wallet: string, at: number): KeyRecord => ({
      id,
      hash: `h-${id}`,
      prefix: 'p',
      agentId,
      wallet,
      account: wallet,
      device: null,
      createdAt: now + at,
      revokedAt: null,
      revokedReason: null,
    })
    // Agent 71 under two holders in turn; agent 710 shares the prefix "71".
    await store.keys.put('k-new', key('k-new', '71', '0xnew', 2))
    await store.keys.put('k-old', key('k-old', '71', '0xold', 1))
    await store.keys.put('k-other', key('k-other', '710', '0xold', 3))
    t.same(
      (await store.activeKeysOfAgent('71')).map((k) => k.id),
      ['k-old', 'k-new'],
      'both holders, oldest first, not agent 710',
    )
    const old = (await store.keys.get('k-old'))!
    await store.keys.put('k-old', { ...old, revokedAt: now, revokedReason: 'lost' })
    t.same(
      (await store.activeKeysOfAgent('71')).map((k) => k.id),
      ['k-new'],
      'revoked: gone from the index',
    )
    t.same(
      (await store.activeKeysOfAgent('72')).map((k) => k.id),
      [],
      'an agent without keys',
    )
    t.same(
      (await store.keysOf('0xold')).map((k) => [k.id, k.revokedReason]),
      [
        ['k-old', 'lost'],
        ['k-other', null],
      ],
      'the holder still sees the revoked key',
    )
  })
}

t.test('LevelDB', async (t) => {
  const dir = await tempDir(t, 'svc-store-')
  await contract(t, () => openLevelStore(join(dir, 'market.db')))

  t.test('a data dir from before the indexes is indexed at open', async (t) => {
    const path = join(await tempDir(t, 'svc-store-old-'), 'market.db')
    const s = await openLevelStore(path)
    const ls = makeListings(30, 3)
    for (const l of ls) await s.listings.put(l.slug, l)
    await s.close()
    // What an older market left: the listings, no index, no counters, no mark.
    const raw = new Level<string, unknown>(path, { valueEncoding: 'json' })
    for (const name of ['listingIndex', 'listingCounts', 'meta']) await raw.sublevel(name).clear()
    await raw.close()
    const again = await openLevelStore(path)
    t.teardown(() => again.close())
    const p = await again.browse({ words: [], sort: 'price', limit: 100 })
    t.equal(p.total, 30)
    t.same(
      p.listings.map((l) => l.slug),
      reference(ls, { words: [], sort: 'price', limit: 0 }).map((l) => l.slug),
    )
  })
})

t.test('LevelDB: keys written before the agent index are found by agent after open', async (t) => {
  const path = join(await tempDir(t, 'svc-store-keys-'), 'market.db')
  const s = await openLevelStore(path)
  const k: KeyRecord = {
    id: 'k1',
    hash: 'h1',
    prefix: 'p',
    agentId: '5',
    wallet: '0xw',
    account: '0xw',
    device: null,
    createdAt: 1,
    revokedAt: null,
    revokedReason: null,
  }
  await s.keys.put(k.id, k)
  await s.close()
  // What a market of index version 2 left: keys, no agent index, its mark at 2.
  const raw = new Level<string, unknown>(path, { valueEncoding: 'json' })
  await raw.sublevel('activeKeysByAgent').clear()
  await raw.sublevel<string, number>('meta', { valueEncoding: 'json' }).put('indexVersion', 2)
  await raw.close()
  const again = await openLevelStore(path)
  t.teardown(() => again.close())
  t.same(
    (await again.activeKeysOfAgent('5')).map((x) => x.id),
    ['k1'],
  )
})

const pgWhy = postgresMissing()
t.test('PostgreSQL', { skip: pgWhy ?? false }, async (t) => {
  const url = (await testStoreUrl('postgres'))!
  await contract(t, () => openPgStore(url))

  t.test('two stores on one database: one purchase per hash, no lock shared', async (t) => {
    const db = (await testStoreUrl('postgres'))!
    const [a, b] = await Promise.all([openPgStore(db), openPgStore(db)])
    t.teardown(async () => {
      await a.close()
      await b.close()
    })
    const now = Date.now()
    const wins = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        (i % 2 ? a : b).recordPurchase(
          { txHash: '0xshared', slug: 's', buyer: `0x${i}`, at: now },
          { slug: 's', buyer: `0x${i}`, txHash: '0xshared', at: now },
        ),
      ),
    )
    t.equal(wins.filter(Boolean).length, 1)
    await a.nonces.put('n', { nonce: 'n', expiresAt: now + 1000 })
    const n = await Promise.all(Array.from({ length: 50 }, (_, i) => (i % 2 ? a : b).consumeNonce('n', now)))
    t.equal(n.filter(Boolean).length, 1, 'a nonce used on one is gone on the other')
    t.equal(await a.sharedSecret('cookie', 'first'), 'first')
    t.equal(await b.sharedSecret('cookie', 'second'), 'first', 'the first instance’s secret wins')
  })

  t.test('migrations run once, however many instances start together', async (t) => {
    const db = (await testStoreUrl('postgres'))!
    const pools = [0, 1, 2].map(() => new pg.Pool({ connectionString: db, max: 2 }))
    for (const p of pools) p.on('error', () => undefined).on('connect', (c) => c.on('error', () => undefined))
    t.teardown(() => Promise.all(pools.map((p) => p.end())))
    const applied = await Promise.all(pools.map((p) => migrate(p)))
    t.same(
      applied.map((a) => a.length).sort(),
      [0, 0, 3],
      'one instance applied the migrations, the others found them done',
    )
    const r = await pools[0]!.query('select name from schema_migrations')
    t.same(r.rows.map((x) => x.name).sort(), [
      '001_store.sql',
      '002_purchases_by_buyer.sql',
      '003_active_keys_by_agent.sql',
    ])
  })

  t.test('an unreachable database: one line, no password', async (t) => {
    const port = await freePort()
    await t.rejects(openPgStore(`postgres://svc:s3cret@127.0.0.1:${port}/market`), {
      message: new RegExp(`market store postgres://svc:\\*\\*\\*@127\\.0\\.0\\.1:${port}/market: `),
    })
    try {
      await openPgStore(`postgres://svc:s3cret@127.0.0.1:${port}/market`)
    } catch (err) {
      t.notMatch((err as Error).message, 's3cret')
    }
  })
})

t.test('[store] in market.toml: a bad url is refused naming the field', async (t) => {
  const bad = parseMarketConfig('[store]\nurl = "mysql://x/y"\n', 'market.toml', '/d')
  t.same(bad.ok, false)
  t.match(!bad.ok && bad.error, /^market\.toml: store\.url: must be a postgres:\/\/ URL/)
  const unknown = parseMarketConfig('[store]\nengine = "pg"\n', 'market.toml', '/d')
  t.match(!unknown.ok && unknown.error, 'market.toml: store.engine: unknown field')
  const good = parseMarketConfig(
    '[store]\nurl = "postgres://svc@db:5432/market"\nblocksDir = "/srv/blocks"\n',
    '/etc/svc/market.toml',
    '/d',
  )
  t.ok(good.ok)
  if (good.ok) {
    t.equal(good.config.storeUrl, 'postgres://svc@db:5432/market')
    t.equal(good.config.blocksDir, '/srv/blocks')
  }
  const dflt = parseMarketConfig('', 'market.toml', '/d')
  t.equal(dflt.ok && dflt.config.storeUrl, null, 'no [store]: LevelDB')
})
