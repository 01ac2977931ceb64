// When the hub refuses new work for want of disk, and when it takes work again. Pure: the I/O
// edge (guard.ts) feeds it readings of free space and the outcome of store writes and reopens,
// and carries out what it answers (one log line, reopen these stores, let work in again).
//
// Two ways in: a reading below the reserve (the normal one: nothing has failed yet), or a store
// write that failed anyway (the disk filled faster than the watcher reads it). One way out: every
// watched path has its reserve and a margin free again, and every store that failed has been
// reopened, since LevelDB keeps a write error until the database is opened again.
import { resumeAt } from './reserve.ts'

export interface Reading {
  /** The folder read (the data folder, or a store's own). */
  path: string
  /** Bytes the hub may still write there (statfs `bavail`). */
  free: number
  size: number
  /** The reserve on that filesystem (reserve.ts). */
  reserve: number
}

export interface StoreFailure {
  store: string
  error: string
  at: number
}

export type Cause = { kind: 'reserve'; path: string } | { kind: 'write'; store: string; error: string }

export interface DiskState {
  mode: 'ok' | 'refusing'
  /** When the current mode began (ms). */
  since: number
  /** Why it refuses; null while ok. */
  cause: Cause | null
  /** The latest reading of each watched path. */
  readings: readonly Reading[]
  /** Stores whose writes failed and that have not been reopened since. */
  failed: readonly StoreFailure[]
  /** A reopen is under way (its outcome comes back as a `reopened` event). */
  reopening: boolean
  /** No reopen before this time (ms): a store that failed again soon after its reopen waits longer. */
  reopenAfter: number
  /** Episodes in a row that began soon after the hub had resumed (the backoff's exponent). */
  flaps: number
  /** When the hub last took work again (ms); -Infinity before. */
  resumedAt: number
}

export type DiskEvent =
  | { kind: 'read'; at: number; readings: readonly Reading[] }
  | { kind: 'write-failed'; at: number; store: string; error: string }
  /** The outcome of a `reopen` action: the stores that failed to open again, with why. */
  | {
      kind: 'reopened'
      at: number
      stores: readonly string[]
      failed: readonly { store: string; error: string }[]
    }

export type DiskAction =
  /** Work stops: say so once, with the cause and the space. */
  | { kind: 'refuse'; cause: Cause; reading: Reading | null; again: boolean }
  /** Space is back: open these stores again (then report `reopened`). */
  | { kind: 'reopen'; stores: string[] }
  /** A reopen did not take: it is tried again later. */
  | { kind: 'reopen-failed'; failed: { store: string; error: string }[]; retryInMs: number }
  /** Work goes on: say so once. */
  | { kind: 'resume'; refusedMs: number; reading: Reading | null }

/** An episode that begins within this long of the last resume counts as the same trouble again. */
export const FLAP_MS = 60_000
/** The longest wait between two reopen attempts. */
export const MAX_REOPEN_WAIT_MS = 5 * 60_000

export function initialState(at: number): DiskState {
  return {
    mode: 'ok',
    since: at,
    cause: null,
    readings: [],
    failed: [],
    reopening: false,
    reopenAfter: 0,
    flaps: 0,
    resumedAt: Number.NEGATIVE_INFINITY,
  }
}

/** The reading closest to (or furthest below) its reserve; null before the first reading. */
export function worstReading(readings: readonly Reading[]): Reading | null {
  let worst: Reading | null = null
  for (const r of readings) if (worst === null || r.free - r.reserve < worst.free - worst.reserve) worst = r
  return worst
}

const clear = (readings: readonly Reading[]): boolean => readings.every((r) => r.free >= resumeAt(r.reserve))

/** How long to wait before reopening after `flaps` episodes in a row: none at first, then 2, 4, 8 s … */
export function reopenWaitMs(flaps: number): number {
  return flaps === 0 ? 0 : Math.min(MAX_REOPEN_WAIT_MS, 1000 * 2 ** flaps)
}

function refuse(s: DiskState, at: number, cause: Cause): { state: DiskState; actions: DiskAction[] } {
  const again = at - s.resumedAt < FLAP_MS
  const flaps = again ? s.flaps + 1 : 0
  return {
    state: { ...s, mode: 'refusing', since: at, cause, flaps, reopenAfter: at + reopenWaitMs(flaps) },
    actions: [{ kind: 'refuse', cause, reading: worstReading(s.readings), again }],
  }
}

/** Leaves refusing once nothing holds it there; else asks for the reopens it needs. */
function settle(s: DiskState, at: number): { state: DiskState; actions: DiskAction[] } {
  if (s.mode !== 'refusing' || !clear(s.readings)) return { state: s, actions: [] }
  if (s.failed.length > 0) {
    if (s.reopening || at < s.reopenAfter) return { state: s, actions: [] }
    return {
      state: { ...s, reopening: true },
      actions: [{ kind: 'reopen', stores: s.failed.map((f) => f.store) }],
    }
  }
  return {
    state: { ...s, mode: 'ok', since: at, cause: null, resumedAt: at },
    actions: [{ kind: 'resume', refusedMs: at - s.since, reading: worstReading(s.readings) }],
  }
}

export function step(s: DiskState, e: DiskEvent): { state: DiskState; actions: DiskAction[] } {
  switch (e.kind) {
    case 'read': {
      const next: DiskState = { ...s, readings: e.readings }
      const low = e.readings.filter((r) => r.free < r.reserve)
      if (next.mode === 'ok') {
        const worst = worstReading(low)
        return worst
          ? refuse(next, e.at, { kind: 'reserve', path: worst.path })
          : { state: next, actions: [] }
      }
      // While refusing for the reserve, the cause follows the path furthest below it.
      const worst = worstReading(low)
      if (worst && next.cause?.kind === 'reserve') next.cause = { kind: 'reserve', path: worst.path }
      return settle(next, e.at)
    }
    case 'write-failed': {
      const failed = s.failed.some((f) => f.store === e.store)
        ? s.failed
        : [...s.failed, { store: e.store, error: e.error, at: e.at }]
      const next: DiskState = { ...s, failed }
      if (next.mode === 'ok') return refuse(next, e.at, { kind: 'write', store: e.store, error: e.error })
      return { state: next, actions: [] }
    }
    case 'reopened': {
      const still = new Map(e.failed.map((f) => [f.store, f.error]))
      const failed = s.failed
        .filter((f) => !e.stores.includes(f.store) || still.has(f.store))
        .map((f) => (still.has(f.store) ? { ...f, error: still.get(f.store) as string } : f))
      const next: DiskState = { ...s, failed, reopening: false }
      if (e.failed.length === 0) return settle(next, e.at)
      const flaps = s.flaps + 1
      const wait = reopenWaitMs(flaps)
      return {
        state: { ...next, flaps, reopenAfter: e.at + wait },
        actions: [{ kind: 'reopen-failed', failed: [...e.failed], retryInMs: wait }],
      }
    }
  }
}
