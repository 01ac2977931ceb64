// The market's LevelDB: one database, one sublevel per record kind, JSON values. Writes whose loss
// would let something happen twice (a consumed challenge, a used transaction hash) are `sync`
// batches (DESIGN: storage).
import { Level } from 'level'
import type {
  ChallengeRecord,
  KeyRecord,
  ListingRecord,
  NonceRecord,
  PurchaseRecord,
  SessionRecord,
  UsedTxRecord,
  VerificationRecord,
} from './records.ts'

/** The slice of a typed sublevel the market uses. */
export interface Sub<V> {
  get(key: string): Promise<V | undefined>
  put(key: string, value: V, options?: { sync?: boolean }): Promise<void>
  del(key: string, options?: { sync?: boolean }): Promise<void>
  values(options?: { gte?: string; lt?: string; limit?: number }): AsyncIterable<V>
}

export interface MarketDb {
  root: Level<string, unknown>
  sessions: Sub<SessionRecord>
  nonces: Sub<NonceRecord>
  challenges: Sub<ChallengeRecord>
  keys: Sub<KeyRecord>
  /** sha-256 of a key (hex) → key id. */
  keyHashes: Sub<string>
  listings: Sub<ListingRecord>
  /** transaction hash (lowercase) → who used it for what. */
  usedTx: Sub<UsedTxRecord>
  /** `<slug>!<buyer lowercase>` → the purchase. */
  purchases: Sub<PurchaseRecord>
  /** slug → the listing's last verification. */
  verifications: Sub<VerificationRecord>
  close(): Promise<void>
}

export async function openMarketDb(path: string): Promise<MarketDb> {
  const root = new Level<string, unknown>(path, { valueEncoding: 'json' })
  await root.open()
  const sub = <V>(name: string): Sub<V> =>
    root.sublevel<string, V>(name, { valueEncoding: 'json' }) as unknown as Sub<V>
  return {
    root,
    sessions: sub('sessions'),
    nonces: sub('nonces'),
    challenges: sub('challenges'),
    keys: sub('keys'),
    keyHashes: sub('keyHashes'),
    listings: sub('listings'),
    usedTx: sub('usedTx'),
    purchases: sub('purchases'),
    verifications: sub('verifications'),
    close: () => root.close(),
  }
}

/** Every value of a sublevel, in key order. The market's tables are small (keys, listings). */
export async function allValues<V>(db: Sub<V>): Promise<V[]> {
  const out: V[] = []
  for await (const v of db.values()) out.push(v)
  return out
}

export interface PutOp {
  sub: Sub<never> | Sub<unknown>
  key: string
  value: unknown
}

/** Puts across sublevels in one atomic `sync` batch (survives power loss, all or nothing). */
export async function syncPut(db: MarketDb, ops: PutOp[]): Promise<void> {
  await db.root.batch(
    ops.map((o) => ({ type: 'put' as const, sublevel: o.sub as never, key: o.key, value: o.value })),
    { sync: true },
  )
}
