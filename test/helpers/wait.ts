// Waiting for a state the code under test reaches asynchronously (a message delivered, a run
// finished, a child process ready): one polling loop for every test instead of a copy per file.
// Giving up is only a safety net, so that a broken test fails with a message instead of hanging
// until tap's timeout. No test may assert on how long a wait took; the limits are generous.
import { setTimeout as sleep } from 'node:timers/promises'

export interface WaitOptions {
  /** Give up after this long, in ms (default 20 s). A safety net, not a deadline to test against. */
  timeoutMs?: number
  /** Pause between probes, in ms (default 10). */
  intervalMs?: number
}

/** What a successful probe returned: its value with the "not yet" values taken out. */
export type Reached<T> = Exclude<T, undefined | null | false | 0 | ''>

/**
 * Calls `probe` until it returns a truthy value, and returns that value (so a probe can hand back
 * what it found). Throws `timed out waiting for <what>` after `timeoutMs`. Errors thrown by the
 * probe are not retried: they end the wait.
 */
export async function waitFor<T>(
  probe: () => T | PromiseLike<T>,
  what: string,
  opts: WaitOptions = {},
): Promise<Reached<T>> {
  const { timeoutMs = 20_000, intervalMs = 10 } = opts
  const giveUpAt = Date.now() + timeoutMs
  for (;;) {
    const v = await probe()
    if (v) return v as Reached<T>
    if (Date.now() >= giveUpAt) throw new Error(`timed out waiting for ${what}`)
    await sleep(intervalMs)
  }
}

export interface CountOptions {
  /** Give up once the count has not grown for this long, in ms (default 5 s). */
  idleMs?: number
  /** Pause between reads of the count, in ms (default 50). */
  intervalMs?: number
}

/**
 * Waits until `count()` reaches `want`, giving up only once it has stopped growing for `idleMs`:
 * not a deadline, so a large but steady delivery is never cut short. It does not throw; it returns
 * the last count, and the caller asserts on it (so a failure says how many arrived).
 */
export async function waitForCount(
  count: () => number,
  want: number,
  opts: CountOptions = {},
): Promise<number> {
  const { idleMs = 5_000, intervalMs = 50 } = opts
  let last = count()
  let grewAt = Date.now()
  while (last < want) {
    await sleep(intervalMs)
    const now = count()
    if (now !== last) {
      last = now
      grewAt = Date.now()
    } else if (Date.now() - grewAt >= idleMs) break
  }
  return last
}
