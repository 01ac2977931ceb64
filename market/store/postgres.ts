// The engine for several market processes: PostgreSQL through node-postgres. Every record is a
// JSON document in its kind's table (migrations/001_store.sql); the once-only steps are a unique
// key inside a transaction, so whichever instance commits first wins and every other instance's
// attempt, concurrent or later, finds the key taken.
import pg from 'pg'
import { errorText } from '../../errors/text.ts'
import { migrate } from './migrate.ts'
import { agentListingsPg, agentStatsPg, browsePg } from './postgres-listings.ts'
import type { KeyRecord, ListingRecord, PurchaseRecord } from './records.ts'
import type { MarketStore, Sub } from './store.ts'

/** The URL without its password, for messages and logs. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url)
    if (u.password) u.password = '***'
    return u.toString()
  } catch {
    return 'postgres://…'
  }
}

function table<V>(pool: pg.Pool, name: string): Sub<V> {
  return {
    async get(k) {
      const r = await pool.query<{ doc: V }>(`select doc from ${name} where k = $1`, [k])
      return r.rows[0]?.doc
    },
    async getMany(ks) {
      if (ks.length === 0) return []
      const r = await pool.query<{ k: string; doc: V }>(
        `select k, doc from ${name} where k = any($1::text[])`,
        [ks],
      )
      const by = new Map(r.rows.map((x) => [x.k, x.doc]))
      return ks.map((k) => by.get(k))
    },
    async put(k, v) {
      await pool.query(
        `insert into ${name} (k, doc) values ($1, $2::jsonb) on conflict (k) do update set doc = excluded.doc`,
        [k, JSON.stringify(v)],
      )
    },
    async del(k) {
      await pool.query(`delete from ${name} where k = $1`, [k])
    },
    async *values() {
      // A page at a time in key order, as LevelDB's iterator walks.
      let after = ''
      for (;;) {
        const r = await pool.query<{ k: string; doc: V }>(
          `select k, doc from ${name} where k > $1 order by k collate "C" limit 500`,
          [after],
        )
        for (const row of r.rows) yield row.doc
        if (r.rows.length < 500) return
        after = r.rows[r.rows.length - 1]!.k
      }
    },
  }
}

export interface PgStoreOptions {
  /** Connections per instance (default 10). */
  max?: number
}

export async function openPgStore(url: string, o: PgStoreOptions = {}): Promise<MarketStore> {
  const pool = new pg.Pool({ connectionString: url, max: o.max ?? 10 })
  // An idle connection the server closed (a restart, a failover) is replaced on next use; without
  // a listener node-postgres would throw it out of the process.
  pool.on('error', () => undefined)
  // The same for a connection in use when the server goes away: its query fails with the error;
  // the connection's own 'error' event must not also end the process.
  pool.on('connect', (client) => client.on('error', () => undefined))
  try {
    await migrate(pool)
  } catch (err) {
    await pool.end().catch(() => undefined)
    throw new Error(`market store ${redactUrl(url)}: ${errorText(err)}`)
  }

  /** Runs `fn` in one transaction; a `false` answer rolls it back. */
  async function tx<T>(fn: (c: pg.PoolClient) => Promise<T | false>): Promise<T | false> {
    const c = await pool.connect()
    try {
      await c.query('begin')
      const out = await fn(c)
      await c.query(out === false ? 'rollback' : 'commit')
      return out
    } catch (err) {
      await c.query('rollback').catch(() => undefined)
      throw err
    } finally {
      c.release()
    }
  }
  const json = (v: unknown) => JSON.stringify(v)
  const insertListing = (c: pg.PoolClient | pg.Pool, rec: ListingRecord) =>
    c.query(
      'insert into listings (k, doc) values ($1, $2::jsonb) on conflict (k) do update set doc = excluded.doc',
      [rec.slug, json(rec)],
    )
  const listings = table<ListingRecord>(pool, 'listings')

  return {
    engine: 'postgres',
    sessions: table(pool, 'sessions'),
    nonces: table(pool, 'nonces'),
    challenges: table(pool, 'challenges'),
    keys: table<KeyRecord>(pool, 'agent_keys'),
    keyHashes: table(pool, 'key_hashes'),
    listings: { ...listings, put: async (_k, rec) => void (await insertListing(pool, rec)) },
    usedTx: table(pool, 'used_tx'),
    purchases: table(pool, 'purchases'),
    verifications: table(pool, 'verifications'),

    async consumeNonce(nonce, now) {
      // One statement: of any number of concurrent deletes, one sees the row.
      const r = await pool.query("delete from nonces where k = $1 and (doc->>'expiresAt')::bigint > $2", [
        nonce,
        now,
      ])
      return r.rowCount === 1
    },
    async useChallenge(id, now, key) {
      const r = await tx(async (c) => {
        const first = await c.query(
          'insert into consumed_challenges (k, at) values ($1, $2) on conflict do nothing',
          [id, now],
        )
        if (first.rowCount !== 1) return false
        const marked = await c.query(
          `update challenges set doc = jsonb_set(doc, '{usedAt}', to_jsonb($2::bigint)) where k = $1 and doc->'usedAt' = 'null'::jsonb`,
          [id, now],
        )
        if (marked.rowCount !== 1) return false
        await c.query('insert into agent_keys (k, doc) values ($1, $2::jsonb)', [key.id, json(key)])
        await c.query('insert into key_hashes (k, doc) values ($1, $2::jsonb)', [key.hash, json(key.id)])
        return true
      })
      return r === true
    },
    async recordPurchase(used, bought) {
      const r = await tx(async (c) => {
        const first = await c.query(
          'insert into used_tx (k, doc) values ($1, $2::jsonb) on conflict do nothing',
          [used.txHash, json(used)],
        )
        if (first.rowCount !== 1) return false
        await c.query(
          'insert into purchases (k, doc) values ($1, $2::jsonb) on conflict (k) do update set doc = excluded.doc',
          [`${bought.slug}!${bought.buyer}`, json(bought)],
        )
        return true
      })
      return r === true
    },
    async idempotent<B>(slot: string) {
      const r = await pool.query<{ doc: B }>('select doc from listing_idempotency where k = $1', [slot])
      return r.rows[0]?.doc
    },
    async createListing<B>(rec: ListingRecord, idem?: { slot: string; body: B }) {
      if (!idem) {
        await insertListing(pool, rec)
        return undefined
      }
      const r = await tx(async (c) => {
        // A concurrent holder of the slot makes this insert wait for its commit, then do nothing.
        const first = await c.query(
          'insert into listing_idempotency (k, doc) values ($1, $2::jsonb) on conflict do nothing',
          [idem.slot, json(idem.body)],
        )
        if (first.rowCount !== 1) return false
        await insertListing(c, rec)
        return idem.body
      })
      if (r !== false) return r
      return (await pool.query<{ doc: B }>('select doc from listing_idempotency where k = $1', [idem.slot]))
        .rows[0]?.doc
    },
    async purchasesOf(buyer) {
      const r = await pool.query<{ doc: PurchaseRecord }>(
        "select doc from purchases where doc->>'buyer' = $1 order by (doc->>'at')::bigint desc, k",
        [buyer],
      )
      return r.rows.map((x) => x.doc)
    },
    async keysOf(address) {
      const r = await pool.query<{ doc: KeyRecord }>(
        'select doc from agent_keys where account = $1 or wallet = $1 order by created_at, k',
        [address],
      )
      return r.rows.map((x) => x.doc)
    },
    async activeKeysOfAgent(agentId) {
      const r = await pool.query<{ doc: KeyRecord }>(
        "select doc from agent_keys where doc->>'agentId' = $1 and doc->>'revokedAt' is null order by created_at, k",
        [agentId],
      )
      return r.rows.map((x) => x.doc)
    },
    async putListings(recs) {
      await pool.query(
        `insert into listings (k, doc) select d->>'slug', d from jsonb_array_elements($1::jsonb) as d
         on conflict (k) do update set doc = excluded.doc`,
        [json(recs)],
      )
    },
    browse: (q) => browsePg(pool, q),
    agentListings: (agentId, limit, after) => agentListingsPg(pool, agentId, limit, after),
    agentStats: (agentId, since) => agentStatsPg(pool, agentId, since),
    async sharedSecret(name, fresh) {
      await pool.query('insert into shared_secrets (k, v) values ($1, $2) on conflict do nothing', [
        name,
        fresh,
      ])
      return (await pool.query<{ v: string }>('select v from shared_secrets where k = $1', [name])).rows[0]!.v
    },
    close: () => pool.end(),
  }
}
