// One listing on the device, from `svc listing create` until the market holds it. Stored as
// `<SVC_HOME>/listings/<id>/listing.json` beside its three files (queue.ts).
//   draft   the store was busy (the hub holds it): the hub builds the files at its next tick
//   queued  files built and checked; waiting to be posted (offline, or the market refused to answer)
//   posted  the market answered 201; `url` is absolute
//   failed  the market refused it for good (4xx other than 408/429); `lastError` says why
export type ListingState = 'draft' | 'queued' | 'posted' | 'failed'

export interface ListingText {
  title: string
  summary: string
  description: string
  machineType: string
  license: string
  /** Decimal text, as typed (the market parses it to wei). */
  priceNative: string
}

export interface ListingRange {
  /** First seq, 0-based inclusive. */
  from?: number
  /** Last seq, exclusive. */
  to?: number
}

export interface ListingEntry {
  version: 1
  /** Also the Idempotency-Key of its post: a retried post can never list it twice. */
  id: string
  createdAt: string
  state: ListingState
  fields: ListingText
  range: ListingRange
  /** Market origin the listing goes to, e.g. http://127.0.0.1:8787. */
  market: string
  /** File name of the cover image copied into the listing folder, and its MIME type. */
  image: { file: string; type: string } | null
  rows: number | null
  /**
   * Sample lines published on the listing page: the first N lines of the data (the market's
   * `preview` field, 0 to 5). Absent on entries written before it existed: none.
   */
  preview?: number
  attempts: number
  lastError: string | null
  nextAttemptAt: string | null
  slug: string | null
  url: string | null
  postedAt: string | null
}
