// What a board drops (garbage, overlong lines, late replies) is logged at a bounded rate: a board
// spewing noise at 115200 baud must not fill the disk, yet none of it may pass unseen. The first
// report of a kind is logged at once; the rest within `intervalMs` are counted, and a timer logs
// one summary (the latest report and how many were held back) when the interval ends, so the
// count shows up promptly even when no further bad line ever comes. At most one line per kind
// per interval, then.
import type { Log } from './types.ts'

export interface RateLimitedWarn {
  warn(key: string, fields: object, msg: string): void
  /** Logs what is held back now and stops the timers (the link is closing). */
  close(): void
}

export interface WarnTimers {
  set(fn: () => void, ms: number): unknown
  clear(handle: unknown): void
}

const nodeTimers: WarnTimers = {
  set(fn, ms) {
    const h = setTimeout(fn, ms)
    h.unref?.()
    return h
  },
  clear: (h) => clearTimeout(h as NodeJS.Timeout),
}

interface Window {
  at: number
  suppressed: number
  latest?: { fields: object; msg: string }
  timer?: unknown
}

export function createRateLimitedWarn(
  log: Log,
  intervalMs: number,
  now: () => number,
  timers: WarnTimers = nodeTimers,
): RateLimitedWarn {
  const windows = new Map<string, Window>()

  function flush(w: Window): void {
    w.timer = undefined
    if (w.suppressed === 0 || !w.latest) return
    const { fields, msg } = w.latest
    log.warn({ ...fields, suppressed: w.suppressed }, `${msg} (${w.suppressed} more since the last report)`)
    // The summary opens a new window: the next bad line within it is held back again.
    w.at = now()
    w.suppressed = 0
    w.latest = undefined
  }

  return {
    warn(key, fields, msg) {
      const t = now()
      const w = windows.get(key)
      if (w && t - w.at < intervalMs) {
        w.suppressed++
        w.latest = { fields, msg }
        w.timer ??= timers.set(() => flush(w), Math.max(0, w.at + intervalMs - t))
        return
      }
      if (w) {
        // The window ended before its timer ran: its summary first, so no count is lost.
        if (w.timer !== undefined) timers.clear(w.timer)
        flush(w)
      }
      windows.set(key, { at: t, suppressed: 0 })
      log.warn(fields, msg)
    },
    close() {
      for (const w of windows.values()) {
        if (w.timer !== undefined) timers.clear(w.timer)
        flush(w)
      }
    },
  }
}
