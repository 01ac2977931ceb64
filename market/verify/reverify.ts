// The background re-check: every listing's rows are verified again every `intervalSeconds`, so a
// listing whose proofs went away (a chain reset, a registry redeployed) is marked failed within
// one interval even when nobody presses Verify. One listing at a time, so a large market spreads
// its reads; a chain that does not answer changes no verdict and is tried next round.
import type { MarketContext } from '../context.ts'
import { errorText } from '../../errors/text.ts'
import type { ManifestStore } from '../listings/manifest-store.ts'
import { checkListing } from './listing-check.ts'

export interface Reverifier {
  /** One pass over every listing (tests, and the first pass at start). */
  runOnce(): Promise<{ checked: number; failed: number; unreachable: number }>
  stop(): Promise<void>
}

export function startReverifier(
  ctx: MarketContext,
  manifests: ManifestStore,
  intervalSeconds: number,
  onError: (message: string) => void,
): Reverifier {
  let stopped = false
  let pass: Promise<{ checked: number; failed: number; unreachable: number }> | undefined
  let timer: NodeJS.Timeout | undefined

  async function runPass() {
    const out = { checked: 0, failed: 0, unreachable: 0 }
    for await (const listing of ctx.db.listings.values()) {
      if (stopped) break
      if (listing.sample) continue
      try {
        const r = await checkListing(ctx, manifests, listing)
        if (!r.ok) {
          out.unreachable++
          onError(`re-verifying ${listing.slug}: chain unreachable: ${r.error}`)
          break // the chain is down: the rest would fail the same way
        }
        out.checked++
        if (!r.record.verified) out.failed++
      } catch (err) {
        onError(`re-verifying ${listing.slug}: ${errorText(err)}`)
      }
    }
    return out
  }

  function runOnce() {
    pass ??= runPass().finally(() => {
      pass = undefined
    })
    return pass
  }

  function schedule(): void {
    if (stopped || intervalSeconds <= 0) return
    timer = setTimeout(() => {
      void runOnce().finally(schedule)
    }, intervalSeconds * 1000)
    timer.unref()
  }
  schedule()

  return {
    runOnce,
    async stop() {
      stopped = true
      if (timer) clearTimeout(timer)
      await pass?.catch(() => undefined)
    },
  }
}
