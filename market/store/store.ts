// The market's store: one interface, two engines. LevelDB (leveldb.ts) is the embedded default,
// one process per data dir; PostgreSQL (postgres.ts) lets several market processes share one
// database. Everything that must happen at most once (a SIWE nonce used, a challenge consumed, a
// transaction hash spent, an idempotent listing created) is one method here, atomic in the engine
// itself: a unique constraint inside a transaction on PostgreSQL, a sync batch under a lock on
// LevelDB (which one process holds exclusively). Routes may still queue same-key work in their
// own process (KeyedLock) to spare the database, never as the guarantee.
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

/** One record kind, by key. `values()` walks every record in key order, a page at a time. */
export interface Sub<V> {
  get(key: string): Promise<V | undefined>
  /** Several at once, in the order asked (one read, not one per key). */
  getMany(keys: string[]): Promise<(V | undefined)[]>
  put(key: string, value: V): Promise<void>
  del(key: string): Promise<void>
  values(): AsyncIterable<V>
}

export const SORTS = ['newest', 'price', 'rows'] as const
/** newest: newest first; price: cheapest first; rows: most rows first. Ties: slug order. */
export type Sort = (typeof SORTS)[number]

/** Where a page starts: just after (or just before) the listing a cursor names. */
export interface Cursor {
  sort: Sort
  /** The listing's sort value: createdAt, priceWei (decimal string) or rows. */
  value: number | string
  slug: string
}

export interface BrowseQuery {
  machineType?: string
  license?: string
  minWei?: bigint
  maxWei?: bigint
  /** Words that must all appear in the title or summary (already split and lowercased). */
  words: string[]
  sort: Sort
  limit: number
  after?: Cursor
  before?: Cursor
  /** Skip this many matches first (older clients; `after` is the indexed way). */
  offset?: number
}

export interface BrowsePage {
  total: number
  listings: ListingRecord[]
  /** The page after this one, when there is one. */
  next: Cursor | null
  /** The page before this one, when there is one. */
  prev: Cursor | null
}

/** An agent's listings counted (sample listings left out), for its page. */
export interface AgentStats {
  listings: number
  rows: number
  /** Each listing since `since`: when and how many rows (the chart). */
  recent: { createdAt: number; rows: number }[]
  /** When its oldest and newest listings were made (ms); null without listings. */
  firstAt: number | null
  lastAt: number | null
}

export interface MarketStore {
  readonly engine: 'leveldb' | 'postgres'
  sessions: Sub<SessionRecord>
  nonces: Sub<NonceRecord>
  challenges: Sub<ChallengeRecord>
  keys: Sub<KeyRecord>
  /** sha-256 of a key (hex) → key id. */
  keyHashes: Sub<string>
  /** Putting a listing also keeps its indexes and counts. */
  listings: Sub<ListingRecord>
  /** transaction hash (lowercase) → who used it for what. */
  usedTx: Sub<UsedTxRecord>
  /** `<slug>!<buyer lowercase>` → the purchase. */
  purchases: Sub<PurchaseRecord>
  /** slug → the listing's last verification. */
  verifications: Sub<VerificationRecord>

  /** Removes the nonce when it is known and unexpired: true for exactly one caller. */
  consumeNonce(nonce: string, now: number): Promise<boolean>
  /** Marks the challenge used and stores the key in one step: false when it was already used. */
  useChallenge(challengeId: string, now: number, key: KeyRecord): Promise<boolean>
  /** Spends the hash and records the purchase in one step: false when the hash was spent. */
  recordPurchase(used: UsedTxRecord, bought: PurchaseRecord): Promise<boolean>
  /** The answer stored under an idempotency slot, if any. */
  idempotent<B>(slot: string): Promise<B | undefined>
  /**
   * Stores a new listing. With `idem`, only when that slot is free, in the same step: returns
   * the slot's first answer when another request took it (nothing stored), else `idem.body`.
   */
  createListing<B>(rec: ListingRecord, idem?: { slot: string; body: B }): Promise<B | undefined>
  /** Many listings in one step, indexes and counts included (imports, benchmarks); slugs distinct. */
  putListings(recs: ListingRecord[]): Promise<void>
  /** A buyer's purchases (address lowercase), newest first: from an index, not a scan. */
  purchasesOf(buyer: string): Promise<PurchaseRecord[]>
  /** Keys asked for by `address` or held by it as wallet, oldest first. */
  keysOf(address: string): Promise<KeyRecord[]>
  /** An agent's keys not yet revoked, whoever holds them, oldest first: from an index, not a scan. */
  activeKeysOfAgent(agentId: string): Promise<KeyRecord[]>
  browse(q: BrowseQuery): Promise<BrowsePage>
  /** An agent's listings, newest first, samples left out. */
  agentListings(
    agentId: string,
    limit: number,
    after?: Cursor,
  ): Promise<{ listings: ListingRecord[]; next: Cursor | null }>
  agentStats(agentId: string, since: number): Promise<AgentStats>
  /**
   * A secret every instance must share (the cookie key), made once: the first instance's value
   * wins. Null on LevelDB, whose single process keeps it in a 0600 file instead.
   */
  sharedSecret(name: string, fresh: string): Promise<string | null>
  close(): Promise<void>
}

/** The name the routes have always used for it. */
export type MarketDb = MarketStore
