// Wrong-password throttling for the console's sign-in: at most `max` failures per client address
// in a sliding window, and at most `globalMax` from everyone (one owner account: many addresses
// guessing together must not get N tries each). Pure: the caller gives the clock.

export interface FailureLimiter {
  /** null when a try is allowed now, else the seconds until one is (Retry-After, RFC 9110 §10.2.3). */
  blocked(key: string, now: number): number | null
  fail(key: string, now: number): void
  /** A right password clears that address's failures (not the global count). */
  succeed(key: string): void
}

export interface FailureLimits {
  max: number
  globalMax: number
  windowMs: number
}

export const DEFAULT_LIMITS: FailureLimits = { max: 5, globalMax: 20, windowMs: 15 * 60_000 }

export function createFailureLimiter(limits: FailureLimits = DEFAULT_LIMITS): FailureLimiter {
  const byKey = new Map<string, number[]>()
  const all: number[] = []
  const prune = (list: number[], now: number): void => {
    while (list.length > 0 && (list[0] as number) <= now - limits.windowMs) list.shift()
  }
  const wait = (list: number[], max: number, now: number): number | null =>
    list.length >= max ? Math.max(1, Math.ceil(((list[0] as number) + limits.windowMs - now) / 1000)) : null
  return {
    blocked(key, now) {
      prune(all, now)
      const list = byKey.get(key)
      if (list) {
        prune(list, now)
        if (list.length === 0) byKey.delete(key)
      }
      const a = list ? wait(list, limits.max, now) : null
      const g = wait(all, limits.globalMax, now)
      return a === null ? g : g === null ? a : Math.max(a, g)
    },
    fail(key, now) {
      const list = byKey.get(key) ?? []
      list.push(now)
      byKey.set(key, list)
      all.push(now)
    },
    succeed(key) {
      byKey.delete(key)
    },
  }
}
