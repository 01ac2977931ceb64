// The listing as the read API returns it (market/listings/view.ts ListingView), as pages use it.
import type { Static } from 'typebox'
import type { ListingView } from '../listings/view.ts'

export type ListingSummary = Static<typeof ListingView>
