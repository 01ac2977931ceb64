// What a purchase gives the buyer (the purchase answer's `access`, market/API.md) and the key a
// purchase is stored under, which the file routes and the listing page look up.
import { Type, type Static } from 'typebox'
import type { ListingRecord } from '../store/records.ts'

export const Access = Type.Object({
  dataCid: Type.String(),
  manifestCid: Type.String(),
  dataUrl: Type.String(),
  manifestUrl: Type.String(),
})

export function accessFor(l: ListingRecord): Static<typeof Access> {
  const base = `/api/marketplace/listings/${l.slug}/file?part=`
  return {
    dataCid: l.dataCid,
    manifestCid: l.manifestCid,
    dataUrl: `${base}data`,
    manifestUrl: `${base}manifest`,
  }
}

export const purchaseKey = (slug: string, buyer: string): string => `${slug}!${buyer.toLowerCase()}`
