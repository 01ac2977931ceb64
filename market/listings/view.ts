// A listing as the read API shows it (and the website renders it): public fields only, no CIDs
// (those are what a purchase buys), the price in native units and wei, dates as ISO strings.
import { Type, type Static } from 'typebox'
import { formatEther, getAddress } from 'viem'
import type { ListingRecord } from '../store/records.ts'

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
})

export function listingView(l: ListingRecord): Static<typeof ListingView> {
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
  }
}
