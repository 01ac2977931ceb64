// What sync is doing, as `svc attest status --json`, the hub's GET /attest/sync and the console
// show it, and the one line a person reads. Pure: the sync feeds it events and the clock.

export type SyncState = 'idle' | 'syncing' | 'waiting' | 'stuck' | 'retrying'

export interface SyncProgressFigures {
  /** Lines finished (attested or failed) in this run. */
  done: number
  /** Lines in the queue when the run started. */
  total: number
  linesPerSec: number
  /** Seconds left at the current rate; null until there is a rate. */
  etaSec: number | null
}

export interface SyncStatus {
  state: SyncState
  /** The sentence: "waiting: RPC rate-limited until 2026-11-23T23:01:05Z", "stuck: nonce 41 replaced 2×". */
  line: string
  /** ISO time of the last change of state. */
  since: string
  progress: SyncProgressFigures | null
  rateLimitedUntil: string | null
  stuck: { nonce: number; replaced: number; detail: string } | null
  lastError: string | null
  /** Transactions in flight are resent from the store after a restart; this is what sync knows now. */
  lastRunAt: string | null
}

export interface StatusTracker {
  runStarted(total: number, at: number): void
  lineDone(n: number, at: number): void
  runEnded(at: number): void
  runFailed(error: string, retryAt: number, at: number): void
  rateLimited(untilMs: number, at: number): void
  stuck(nonce: number, replaced: number, detail: string, at: number): void
  unstuck(at: number): void
  snapshot(at: number): SyncStatus
}

const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z')

export function etaText(sec: number | null): string {
  if (sec === null || !Number.isFinite(sec)) return '?'
  const s = Math.max(0, Math.round(sec))
  if (s < 60) return `${s}s`
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`
}

export function createStatusTracker(): StatusTracker {
  let base: 'idle' | 'syncing' | 'retrying' = 'idle'
  let since = Date.now()
  let run: { start: number; total: number; done: number } | null = null
  let rateUntil = 0
  let stuck: SyncStatus['stuck'] = null
  let lastError: string | null = null
  let retryAt = 0
  let lastRunAt: number | null = null

  function figures(at: number): SyncProgressFigures | null {
    if (!run) return null
    const secs = (at - run.start) / 1000
    const rate = secs > 0 ? run.done / secs : 0
    return {
      done: run.done,
      total: run.total,
      linesPerSec: Math.round(rate * 10) / 10,
      etaSec: rate > 0 ? Math.round((run.total - run.done) / rate) : null,
    }
  }

  return {
    runStarted(total, at) {
      run = { start: at, total, done: 0 }
      if (base !== 'syncing') since = at
      base = 'syncing'
    },
    lineDone(n, _at) {
      if (run) run.done += n
    },
    runEnded(at) {
      lastRunAt = at
      lastError = null
      stuck = null
      if (base !== 'idle') since = at
      base = 'idle'
    },
    runFailed(error, when, at) {
      lastRunAt = at
      lastError = error
      retryAt = when
      if (base !== 'retrying') since = at
      base = 'retrying'
    },
    rateLimited(untilMs, at) {
      if (untilMs > rateUntil) rateUntil = untilMs
      if (untilMs > at) since = at
    },
    stuck(nonce, replaced, detail, at) {
      stuck = { nonce, replaced, detail }
      since = at
    },
    unstuck(at) {
      if (stuck) since = at
      stuck = null
    },
    snapshot(at) {
      const p = figures(at)
      let state: SyncState = base
      let line: string
      if (rateUntil > at) {
        state = 'waiting'
        line = `waiting: RPC rate-limited until ${iso(rateUntil)}`
      } else if (stuck) {
        state = 'stuck'
        line =
          stuck.replaced > 0
            ? `stuck: nonce ${stuck.nonce} replaced ${stuck.replaced}× (${stuck.detail})`
            : `stuck: nonce ${stuck.nonce} (${stuck.detail})`
      } else if (base === 'retrying') {
        line = `retrying at ${iso(retryAt)}: ${lastError}`
      } else if (base === 'syncing' && p) {
        line = `syncing: ${p.done}/${p.total} lines, ${p.linesPerSec} lines/s, ETA ${etaText(p.etaSec)}`
      } else line = 'idle: nothing to send'
      return {
        state,
        line,
        since: iso(since),
        progress: base === 'syncing' ? p : null,
        rateLimitedUntil: rateUntil > at ? iso(rateUntil) : null,
        stuck,
        lastError,
        lastRunAt: lastRunAt === null ? null : iso(lastRunAt),
      }
    },
  }
}
