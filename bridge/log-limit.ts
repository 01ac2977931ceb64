// Garbage from a board is logged at a bounded rate: a board spewing noise at 115200 baud must
// not fill the disk. The first report of a kind is logged, the rest within `intervalMs` are
// only counted, and the next report carries how many were suppressed.
import type { Log } from './types.ts'

export interface RateLimitedWarn {
  warn(key: string, fields: object, msg: string): void
}

export function createRateLimitedWarn(log: Log, intervalMs: number, now: () => number): RateLimitedWarn {
  const last = new Map<string, { at: number; suppressed: number }>()
  return {
    warn(key, fields, msg) {
      const t = now()
      const s = last.get(key)
      if (s && t - s.at < intervalMs) {
        s.suppressed++
        return
      }
      last.set(key, { at: t, suppressed: 0 })
      log.warn(s && s.suppressed > 0 ? { ...fields, suppressed: s.suppressed } : fields, msg)
    },
  }
}
