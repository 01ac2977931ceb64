// A listing as the read API shows it (and the website renders it): public fields only, no CIDs
// (those are what a purchase buys), the price in native units and wei, dates as ISO strings.
import { Type, type Static } from 'typebox'
import { formatEther, getAddress } from 'viem'
import type { ListingRecord, VerificationRecord } from '../store/records.ts'

export const ListingView = Type.Object({
  slug: Type.String(),
  url: Type.String(),
  title: Type.String(),
  summary: Type.String(),
  description: Type.String(),
  machineType: Type.String(),
  license: Type.String(),
  priceNative: Type.String(),
  priceWei: Type.String(),
  payout: Type.String(),
  agentId: Type.String(),
  rows: Type.Integer(),
  dataBytes: Type.Integer(),
  imageUrl: Type.Union([Type.String(), Type.Null()]),
  status: Type.String(),
  sample: Type.Boolean(),
  createdAt: Type.String(),
  /**
   * The listing's last verification: `preview` for samples (no chain is read), `unchecked` until
   * verify or the background re-check has run, then `verified` or `failed` with the block and
   * time of the check and, when failed, why.
   */
  verification: Type.Object({
    state: Type.Union([
      Type.Literal('preview'),
      Type.Literal('unchecked'),
      Type.Literal('verified'),
      Type.Literal('failed'),
    ]),
    block: Type.Union([Type.String(), Type.Null()]),
    checkedAt: Type.Union([Type.String(), Type.Null()]),
    reason: Type.Union([Type.String(), Type.Null()]),
  }),
  /**
   * What the data preview says in short (the browse card): how many fields the lines carry, the
   * time range of their records, how many sample lines the seller published. Null for listings
   * made before previews existed.
   */
  preview: Type.Union([
    Type.Object({
      fields: Type.Integer(),
      from: Type.Union([Type.String(), Type.Null()]),
      to: Type.Union([Type.String(), Type.Null()]),
      samples: Type.Integer(),
    }),
    Type.Null(),
  ]),
})

export type Verification = Static<typeof ListingView>['verification']

export function verificationView(l: ListingRecord, v: VerificationRecord | undefined): Verification {
  if (l.sample) return { state: 'preview', block: null, checkedAt: null, reason: null }
  if (!v) return { state: 'unchecked', block: null, checkedAt: null, reason: null }
  return {
    state: v.verified ? 'verified' : 'failed',
    block: v.block,
    checkedAt: new Date(v.at).toISOString(),
    reason: v.reason ?? null,
  }
}

export function listingView(l: ListingRecord, v?: VerificationRecord): Static<typeof ListingView> {
  return {
    slug: l.slug,
    url: `/marketplace/${l.slug}`,
    title: l.title,
    summary: l.summary,
    description: l.description,
    machineType: l.machineType,
    license: l.license,
    priceNative: formatEther(BigInt(l.priceWei)),
    priceWei: l.priceWei,
    payout: getAddress(l.payout),
    agentId: l.agentId,
    rows: l.rows,
    dataBytes: l.dataBytes,
    imageUrl: l.imageCid ? `/api/marketplace/listings/${l.slug}/image` : null,
    status: l.status,
    sample: l.sample,
    createdAt: new Date(l.createdAt).toISOString(),
    verification: verificationView(l, v),
    preview: l.preview
      ? {
          fields: l.preview.fields.length + l.preview.moreFields,
          from: l.preview.from,
          to: l.preview.to,
          samples: l.preview.samples.length,
        }
      : null,
  }
}
