// The embedded engine: one LevelDB under the data dir, one sublevel per record kind, JSON values.
// LevelDB lets one process open it, so the once-only steps are atomic with an in-process lock
// around a check and one `sync` batch (survives power loss, all or nothing; market/README.md, "The store and several instances").
// The sublevel names are those of every earlier market: an old data dir opens as it was, and its
// indexes are built once at open (the `indexVersion` mark).
import { Level } from 'level'
import { KeyedLock } from './keyed-lock.ts'
import {
  type BatchOp,
  type ListingIndex,
  type Sublevel,
  agentListingsLevel,
  agentStatsLevel,
  browseLevel,
  listingOps,
} from './leveldb-listings.ts'
import type { KeyRecord, ListingRecord, PurchaseRecord } from './records.ts'
import type { MarketStore, Sub } from './store.ts'

// 2: purchases by buyer (the receipts page). 3: active keys by agent (revocation on transfer).
const INDEX_VERSION = 3

type Root = Level<string, unknown>

function sub<V>(root: Root, name: string): Sublevel<V> {
  return root.sublevel<string, V>(name, { valueEncoding: 'json' }) as unknown as Sublevel<V>
}

function plain<V>(s: Sublevel<V>): Sub<V> {
  return {
    get: (k) => s.get(k),
    getMany: (ks) => (ks.length ? s.getMany(ks) : Promise.resolve([])),
    put: (k, v) => s.put(k, v, { sync: true }),
    del: (k) => s.del(k, { sync: true }),
    values: () => s.values(),
  }
}

export async function openLevelStore(path: string): Promise<MarketStore> {
  const root: Root = new Level<string, unknown>(path, { valueEncoding: 'json' })
  await root.open()
  const lock = new KeyedLock()
  const s = {
    sessions: sub<never>(root, 'sessions'),
    nonces: sub<{ nonce: string; expiresAt: number }>(root, 'nonces'),
    challenges: sub<{ usedAt: number | null }>(root, 'challenges'),
    keys: sub<KeyRecord>(root, 'keys'),
    keyHashes: sub<string>(root, 'keyHashes'),
    keyIndex: sub<string>(root, 'keyIndex'),
    agentKeys: sub<string>(root, 'activeKeysByAgent'),
    listings: sub<ListingRecord>(root, 'listings'),
    index: sub<never>(root, 'listingIndex'),
    counts: sub<never>(root, 'listingCounts'),
    usedTx: sub<unknown>(root, 'usedTx'),
    purchases: sub<unknown>(root, 'purchases'),
    buyerIndex: sub<string>(root, 'purchasesByBuyer'),
    verifications: sub<unknown>(root, 'verifications'),
    idem: sub<unknown>(root, 'listingIdempotency'),
    meta: sub<number>(root, 'meta'),
  }
  const ix = { index: s.index, counts: s.counts, listings: s.listings } as unknown as ListingIndex
  const batch = (ops: unknown[]) => root.batch(ops as never, { sync: true })

  // A key is found by the account that asked for it and by its wallet (`<address>!<id>`).
  // Its agent's active keys (`<agentId>!<id>`): a revoked key leaves this index, so revoking on a
  // transfer reads the keys that can still be revoked, never every key the agent ever had.
  const keyIndexOps = (k: KeyRecord) => [
    ...[...new Set([k.account, k.wallet])].map((a) => ({
      type: 'put',
      sublevel: s.keyIndex,
      key: `${a}!${k.id}`,
      value: k.id,
    })),
    k.revokedAt === null
      ? { type: 'put', sublevel: s.agentKeys, key: `${k.agentId}!${k.id}`, value: k.id }
      : { type: 'del', sublevel: s.agentKeys, key: `${k.agentId}!${k.id}` },
  ]

  // A buyer's purchases, newest first: `<buyer>!<inverted time>!<slug>` → the purchase's key.
  const buyerIndexOp = (p: PurchaseRecord) => ({
    type: 'put',
    sublevel: s.buyerIndex,
    key: `${p.buyer}!${String(Number.MAX_SAFE_INTEGER - p.at).padStart(16, '0')}!${p.slug}`,
    value: `${p.slug}!${p.buyer}`,
  })

  const putListing = (rec: ListingRecord, extra: unknown[] = []): Promise<void> =>
    lock.run('listings', async () => {
      const old = await s.listings.get(rec.slug)
      await batch([...(await listingOps(ix, [{ old, rec }])), ...extra])
    })

  const store: MarketStore = {
    engine: 'leveldb',
    sessions: plain(s.sessions),
    nonces: plain(s.nonces) as never,
    challenges: plain(s.challenges) as never,
    keys: {
      ...plain(s.keys),
      put: (id, k) => batch([{ type: 'put', sublevel: s.keys, key: id, value: k }, ...keyIndexOps(k)]),
    },
    keyHashes: plain(s.keyHashes),
    listings: { ...plain(s.listings), put: (_slug, rec) => putListing(rec) },
    usedTx: plain(s.usedTx) as never,
    purchases: plain(s.purchases) as never,
    verifications: plain(s.verifications) as never,

    consumeNonce: (nonce, now) =>
      lock.run(`nonce:${nonce}`, async () => {
        const rec = await s.nonces.get(nonce)
        if (!rec || rec.expiresAt <= now) return false
        await s.nonces.del(nonce, { sync: true })
        return true
      }),
    useChallenge: (id, now, key) =>
      lock.run(`challenge:${id}`, async () => {
        const ch = await s.challenges.get(id)
        if (!ch || ch.usedAt !== null) return false
        await batch([
          { type: 'put', sublevel: s.challenges, key: id, value: { ...ch, usedAt: now } },
          { type: 'put', sublevel: s.keys, key: key.id, value: key },
          { type: 'put', sublevel: s.keyHashes, key: key.hash, value: key.id },
          ...keyIndexOps(key),
        ])
        return true
      }),
    recordPurchase: (used, bought) =>
      lock.run(`tx:${used.txHash}`, async () => {
        if ((await s.usedTx.get(used.txHash)) !== undefined) return false
        await batch([
          { type: 'put', sublevel: s.usedTx, key: used.txHash, value: used },
          { type: 'put', sublevel: s.purchases, key: `${bought.slug}!${bought.buyer}`, value: bought },
          buyerIndexOp(bought),
        ])
        return true
      }),
    idempotent: async <B>(slot: string) => (await s.idem.get(slot)) as B | undefined,
    createListing: async <B>(rec: ListingRecord, idem?: { slot: string; body: B }) => {
      if (!idem) {
        await putListing(rec)
        return undefined
      }
      return lock.run(`idem:${idem.slot}`, async () => {
        const first = (await s.idem.get(idem.slot)) as B | undefined
        if (first !== undefined) return first
        await putListing(rec, [{ type: 'put', sublevel: s.idem, key: idem.slot, value: idem.body }])
        return idem.body
      })
    },
    async purchasesOf(buyer) {
      const keys: string[] = []
      for await (const k of s.buyerIndex.values({ gte: `${buyer}!`, lt: `${buyer}!\xff` })) keys.push(k)
      return (await s.purchases.getMany(keys)).filter((p): p is PurchaseRecord => p !== undefined)
    },
    async keysOf(address) {
      const ids = new Set<string>()
      for await (const id of s.keyIndex.values({ gte: `${address}!`, lt: `${address}!\xff` })) ids.add(id)
      const keys = (await s.keys.getMany([...ids])).filter((k): k is KeyRecord => k !== undefined)
      return keys.sort((a, b) => a.createdAt - b.createdAt)
    },
    async activeKeysOfAgent(agentId) {
      const ids: string[] = []
      for await (const id of s.agentKeys.values({ gte: `${agentId}!`, lt: `${agentId}!\xff` })) ids.push(id)
      const keys = (await s.keys.getMany(ids)).filter((k): k is KeyRecord => k?.revokedAt === null)
      return keys.sort((a, b) => a.createdAt - b.createdAt)
    },
    putListings: (recs) =>
      lock.run('listings', async () => {
        const olds = await s.listings.getMany(recs.map((r) => r.slug))
        await batch(
          await listingOps(
            ix,
            recs.map((rec, i) => ({ old: olds[i], rec })),
          ),
        )
      }),
    browse: (q) => browseLevel(ix, q),
    agentListings: (agentId, limit, after) => agentListingsLevel(ix, agentId, limit, after),
    agentStats: (agentId, since) => agentStatsLevel(ix, agentId, since),
    sharedSecret: async () => null,
    close: () => root.close(),
  }
  await buildIndexes()
  return store

  /** Indexes for a data dir written before they existed (or by an older layout): built once. */
  async function buildIndexes(): Promise<void> {
    if ((await s.meta.get('indexVersion')) === INDEX_VERSION) return
    await s.index.clear()
    await s.counts.clear()
    await s.keyIndex.clear()
    await s.agentKeys.clear()
    await s.buyerIndex.clear()
    for await (const l of s.listings.values())
      await lock.run('listings', async () => batch(await listingOps(ix, [{ old: undefined, rec: l }])))
    const ops: BatchOp[] = []
    for await (const k of s.keys.values()) ops.push(...(keyIndexOps(k) as never[]))
    for await (const p of s.purchases.values()) ops.push(buyerIndexOp(p as PurchaseRecord) as never)
    if (ops.length) await batch(ops)
    await s.meta.put('indexVersion', INDEX_VERSION, { sync: true })
  }
}
