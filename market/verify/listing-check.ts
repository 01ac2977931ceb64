// One listing checked against the chain: every manifest row's validation status, read after the
// block it names, summarised and kept as the listing's last verification. The verify route
// answers with it and the background re-check (reverify.ts) refreshes it, so browse, the listing
// page and the purchase route all judge a listing by the same, latest verdict.
import type { Failure } from '../../errors/codes.ts'
import type { MarketContext } from '../context.ts'
import type { ManifestStore } from '../listings/manifest-store.ts'
import type { ListingRecord, VerificationRecord } from '../store/records.ts'
import { type VerifySummary, verifyRows } from './verify-rows.ts'

export type ListingCheck = { ok: true; summary: VerifySummary; record: VerificationRecord } | Failure

/** Checks a listing that is not a sample and stores the verdict; an unreachable chain stores nothing. */
export async function checkListing(
  ctx: MarketContext,
  manifests: ManifestStore,
  listing: ListingRecord,
): Promise<ListingCheck> {
  const manifest = await manifests.get(listing.manifestCid)
  // The block first: every row is then read at that block or later, so "verified at block N"
  // never claims more than was seen.
  const block = await ctx.chain.blockNumber()
  if (!block.ok) return block
  const reads = await ctx.chain.validationStatuses(manifest.rows.map((r) => r.requestHash))
  const down = reads.find((r) => !r.ok && r.code === 'UNREACHABLE')
  if (down && !down.ok) return down
  const summary = verifyRows(manifest.rows, reads, listing.agentId, ctx.chainConfig.attestor)
  const firstFailure = summary.verdicts.find((v) => !v.pass)
  const record: VerificationRecord = {
    slug: listing.slug,
    verified: summary.failed === 0,
    total: summary.total,
    passed: summary.passed,
    failed: summary.failed,
    block: block.value.toString(),
    at: ctx.now(),
    ...(firstFailure?.reason ? { reason: `row ${firstFailure.index}: ${firstFailure.reason}` } : {}),
  }
  await ctx.db.verifications.put(listing.slug, record)
  return { ok: true, summary, record }
}
