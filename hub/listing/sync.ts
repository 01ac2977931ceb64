// Listing sync: builds drafts (when given the attestation store) and posts queued listings, with
// retries and backoff, exactly once (post.ts: Idempotency-Key). Used by `svc listing sync` once,
// and by the hub as a loop (automatic when online).
import { errorText } from '../../errors/text.ts'
import type { AttestStore } from '../attest/store.ts'
import type { Log } from '../log.ts'
import { buildListingFiles } from './build.ts'
import { type Fetch, postListing } from './post.ts'
import { loadAll, saveEntry } from './queue.ts'
import type { ListingEntry } from './record.ts'

export type ListingSyncLog = Pick<Log, 'info' | 'warn'>

export interface ListingSyncDeps {
  home: string
  /** The bearer key, read at each pass so `svc key set` takes effect without a restart. */
  key: () => Promise<string | null>
  /** The hub's store: drafts queued while it held the store are built here. */
  builder?: { store: AttestStore; agentId: string }
  log: ListingSyncLog
  now?: () => number
  fetch?: Fetch
  timeoutMs?: number
  backoffMinMs?: number
  backoffMaxMs?: number
}

export interface ListingSyncSummary {
  built: number
  posted: ListingEntry[]
  retrying: number
  failed: number
  waiting: number
}

export function backoffMs(attempts: number, min: number, max: number): number {
  return Math.min(max, min * 2 ** Math.max(0, attempts - 1))
}

// One pass at a time in a process: the hub loop and a kick() never post the same entry twice
// at once (and across processes the market's Idempotency-Key makes a second post harmless).
let chain: Promise<unknown> = Promise.resolve()

export function syncListings(
  deps: ListingSyncDeps,
  opts: { force?: boolean } = {},
): Promise<ListingSyncSummary> {
  const run = chain.then(() => pass(deps, opts))
  chain = run.catch(() => undefined)
  return run
}

async function pass(deps: ListingSyncDeps, opts: { force?: boolean }): Promise<ListingSyncSummary> {
  const now = deps.now ?? Date.now
  const sum: ListingSyncSummary = { built: 0, posted: [], retrying: 0, failed: 0, waiting: 0 }
  const key = await deps.key()
  for (const loaded of await loadAll(deps.home)) {
    if (!loaded.ok) {
      deps.log.warn(`listing skipped: ${loaded.error}`)
      continue
    }
    try {
      await passOne(deps, opts, loaded.dir, loaded.entry, sum, key, now)
    } catch (err) {
      // One listing's trouble (a disk error) must not hold up the others.
      deps.log.warn(`listing ${loaded.entry.id}: ${errorText(err)}`)
    }
  }
  return sum
}

async function passOne(
  deps: ListingSyncDeps,
  opts: { force?: boolean },
  dir: string,
  entry: ListingEntry,
  sum: ListingSyncSummary,
  key: string | null,
  now: () => number,
): Promise<void> {
  let e = entry
  if (e.state === 'draft') {
    if (!deps.builder) {
      sum.waiting++
      return
    }
    const b = await buildListingFiles(deps.builder.store, dir, e.range, deps.builder.agentId)
    e = b.ok ? { ...e, state: 'queued', rows: b.rows } : { ...e, state: 'failed', lastError: b.error }
    await saveEntry(dir, e)
    if (!b.ok) {
      deps.log.warn(`listing ${e.id} not built: ${b.error}`)
      sum.failed++
      return
    }
    sum.built++
  }
  if (e.state !== 'queued') return
  if (!opts.force && e.nextAttemptAt !== null && Date.parse(e.nextAttemptAt) > now()) {
    sum.retrying++
    return
  }
  if (key === null) {
    sum.waiting++
    return
  }
  const out = await postListing(dir, e, key, {
    ...(deps.fetch ? { fetch: deps.fetch } : {}),
    ...(deps.timeoutMs ? { timeoutMs: deps.timeoutMs } : {}),
  })
  const attempts = e.attempts + 1
  if (out.kind === 'posted') {
    e = {
      ...e,
      state: 'posted',
      attempts,
      slug: out.slug,
      url: out.url,
      postedAt: new Date(now()).toISOString(),
      lastError: null,
      nextAttemptAt: null,
    }
    sum.posted.push(e)
    deps.log.info(`listing ${e.id} posted: ${out.url}`)
  } else if (out.kind === 'refused') {
    e = { ...e, state: 'failed', attempts, lastError: out.error, nextAttemptAt: null }
    sum.failed++
    deps.log.warn(`listing ${e.id} refused: ${out.error}`)
  } else {
    const wait = backoffMs(attempts, deps.backoffMinMs ?? 2000, deps.backoffMaxMs ?? 300_000)
    e = { ...e, attempts, lastError: out.error, nextAttemptAt: new Date(now() + wait).toISOString() }
    sum.retrying++
    deps.log.warn(`listing ${e.id} not posted yet (${out.error}); retry in ${Math.round(wait / 1000)} s`)
  }
  await saveEntry(dir, e)
}

export interface ListingSyncLoop {
  /** Run a pass now (e.g. right after a listing is queued). */
  kick(): Promise<ListingSyncSummary>
  stop(): Promise<void>
}

export function startListingSync(deps: ListingSyncDeps, intervalMs = 5000): ListingSyncLoop {
  let stopped = false
  let timer: NodeJS.Timeout | null = null
  let current: Promise<unknown> = Promise.resolve()
  const tick = (): void => {
    if (stopped) return
    current = syncListings(deps)
      .catch((err: unknown) => deps.log.warn(`listing sync pass failed: ${errorText(err)}`))
      .finally(() => {
        if (!stopped) timer = setTimeout(tick, intervalMs)
      })
  }
  timer = setTimeout(tick, 0)
  return {
    kick: () => syncListings(deps),
    async stop() {
      stopped = true
      if (timer) clearTimeout(timer)
      await current
    },
  }
}
