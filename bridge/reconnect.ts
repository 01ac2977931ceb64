// One reconnect schedule for the serial and Firmata links: the first retry after `initialMs`,
// each next one twice as late up to `maxMs`, back to `initialMs` once a connection holds. One
// timer at a time, so a link that fails twice in one turn (open error, then close) retries once;
// none after stop, so a closed bridge leaves no timer behind.
export interface Reconnect {
  /** The delay the next `schedule` will wait (for logs). */
  readonly nextMs: number
  /** Runs `attempt` after the current delay, unless a retry is already waiting or stopped. */
  schedule(attempt: () => void): void
  /** A connection held: the next failure retries after `initialMs` again. */
  succeeded(): void
  stop(): void
}

export function createReconnect(initialMs: number, maxMs: number): Reconnect {
  let delay = initialMs
  let timer: NodeJS.Timeout | undefined
  let stopped = false
  return {
    get nextMs() {
      return delay
    },
    schedule(attempt) {
      if (stopped || timer) return
      const ms = delay
      delay = Math.min(delay * 2, maxMs)
      timer = setTimeout(() => {
        timer = undefined
        if (!stopped) attempt()
      }, ms)
    },
    succeeded() {
      delay = initialMs
    },
    stop() {
      stopped = true
      if (timer) clearTimeout(timer)
      timer = undefined
    },
  }
}
