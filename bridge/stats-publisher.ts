// Each board's counters, retained at `boards/<b>/stats` for dashboards and other tools: at most
// one publish per board per interval, and none when nothing changed since the last one, so an
// idle hub sends nothing and a busy one a few small messages a minute, whatever its event rate.
import type { BoardStats } from './types.ts'

export interface StatsPublisherOptions {
  /** Least time between two publishes of one board; 0 = never publish. */
  intervalMs: number
  boards(): { name: string; stats: BoardStats }[]
  publish(board: string, payload: string): void
  setTimer?: (fn: () => void, ms: number) => unknown
  clearTimer?: (h: unknown) => void
}

export interface StatsPublisher {
  start(): void
  /** Publishes what changed since the last tick, once more, and stops. */
  stop(): void
}

export function createStatsPublisher(o: StatsPublisherOptions): StatsPublisher {
  const last = new Map<string, string>()
  const setTimer =
    o.setTimer ??
    ((fn, ms) => {
      const h = setInterval(fn, ms)
      h.unref?.()
      return h
    })
  const clearTimer = o.clearTimer ?? ((h) => clearInterval(h as NodeJS.Timeout))
  let timer: unknown

  function tick(): void {
    for (const { name, stats } of o.boards()) {
      const payload = JSON.stringify(stats)
      if (last.get(name) === payload) continue
      last.set(name, payload)
      o.publish(name, payload)
    }
  }

  return {
    start() {
      if (o.intervalMs <= 0 || timer !== undefined) return
      timer = setTimer(tick, o.intervalMs)
    },
    stop() {
      if (timer === undefined) return
      clearTimer(timer)
      timer = undefined
      tick()
    },
  }
}
