// The listing as the read API returns it (market/routes/listings.ts ListingView), as pages use it.
import type { Static } from 'typebox'
import type { ListingView } from '../routes/listings.ts'

export type ListingSummary = Static<typeof ListingView>
