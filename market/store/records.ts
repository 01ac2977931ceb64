// What the market stores. Addresses are stored lowercase; amounts in wei as decimal strings
// (JSON has no bigint).
import type { ListingFields } from '../../records/listing-fields.ts'
import type { ListingPreview } from '../listings/preview.ts'

export interface SessionRecord {
  id: string
  address: string
  createdAt: number
  expiresAt: number
}

export interface NonceRecord {
  nonce: string
  expiresAt: number
}

export interface ChallengeRecord {
  id: string
  kind: 'key'
  /** The signed-in account the challenge is bound to. */
  account: string
  agentId: string
  wallet: string
  message: string
  expiresAt: number
  usedAt: number | null
}

export interface KeyRecord {
  id: string
  /** sha-256 of the full key, hex. The key itself is never stored. */
  hash: string
  prefix: string
  agentId: string
  /** The wallet that signed the challenge and owned the agent at issue time. */
  wallet: string
  /** The signed-in account that asked for the key. */
  account: string
  device: string | null
  createdAt: number
  revokedAt: number | null
  revokedReason: string | null
}

/** The fields a device submits, as stored: the price in wei as a decimal string. */
export type StoredListingFields = Omit<ListingFields, 'priceWei'> & {
  /** The purchase check compares against this. */
  priceWei: string
}

export interface ListingRecord extends StoredListingFields {
  slug: string
  /** Where buyers pay: the market's configured payout address at creation time. */
  payout: string
  agentId: string
  keyId: string
  /** The key's wallet and the account that asked for the key: both may read the files. */
  ownerWallet: string
  ownerAccount: string
  dataCid: string
  manifestCid: string
  imageCid: string | null
  imageType: string | null
  rows: number
  dataBytes: number
  status: 'listed'
  /** Sample listings are demo data: verify answers `preview: true` and reads no chain. */
  sample: boolean
  createdAt: number
  /**
   * The data preview computed at listing time (market/listings/preview.ts): fields, counts,
   * time range, action histogram and the sample lines the seller published. Absent on listings
   * made before it existed; bounded (about 20 KB at most).
   */
  preview?: ListingPreview
}

/** A listing's last verification against the chain (the verify route or the background check). */
export interface VerificationRecord {
  slug: string
  verified: boolean
  total: number
  passed: number
  failed: number
  /** The block the rows were read at, decimal. */
  block: string
  at: number
  /** Why the first failing row failed, when one did. */
  reason?: string
}

export interface UsedTxRecord {
  txHash: string
  slug: string
  buyer: string
  at: number
}

export interface PurchaseRecord {
  slug: string
  buyer: string
  txHash: string
  at: number
  /** The receipt: the block the payment was mined in (decimal) and what was paid (wei, decimal). Absent on older purchases. */
  block?: string
  valueWei?: string
  priceWei?: string
}
