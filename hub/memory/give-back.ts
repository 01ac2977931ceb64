// Memory given back once a busy spell is over (hub/README.md, "Raspberry Pi"). V8 grows its heap
// to take a burst of events and, measured here, often keeps it: after a fill from 100,000 to
// 1,000,000 runs and a minute idle, the heap held 143 MB with 50 MB in use, where a full
// collection left 42 MB (bench/README.md, "endurance: time-ordered run ids, memory given back").
// Its memory reducer gives the heap back only some of the time. So once the hub has been quiet
// for a while after a busy spell (spells.ts), it runs one full collection itself: one pause
// (85 ms here with 72 MB alive) at a moment no event is waiting, once per spell. Quiet for a
// while, not at the first quiet window: what a burst leaves to do later (LevelDB's staged
// writes, the MQTT once-only marks forgotten 30 s after their PUBACK) is still alive then and
// builds batches of its own a minute on. A hub at a steady pace is left to V8.
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import type { Log } from '../log.ts'
import { afterWindow, NOTHING_TO_GIVE_BACK } from './spells.ts'

/** How often the CPU is sampled. */
export const WINDOW_MS = 10_000

/**
 * V8's full collection as a function, without starting node with --expose-gc: the flag is set
 * for one new context, the function taken from it, and the flag cleared again, so no context
 * made later (a SOP's condition, say) can call it. Null where V8 refuses.
 */
export function fullCollection(): (() => void) | null {
  const existing = (globalThis as { gc?: unknown }).gc
  if (typeof existing === 'function') return existing as () => void
  try {
    setFlagsFromString('--expose-gc')
    const gc: unknown = runInNewContext('gc')
    return typeof gc === 'function' ? (gc as () => void) : null
  } catch {
    return null
  } finally {
    setFlagsFromString('--no-expose-gc')
  }
}

export interface GiveBackOptions {
  log: Log
  /** CPU used by this process so far, in µs (process.cpuUsage's user + system). */
  cpuMicros?: () => number
  collect?: (() => void) | null
  heapBytes?: () => { total: number; used: number }
  windowMs?: number
  /** How long the hub must have been quiet after a busy spell (rounded up to whole windows). */
  quietMs: number
}

export interface GiveBack {
  /** Collections run so far. */
  readonly collections: number
  stop(): void
}

export function startGiveBack(o: GiveBackOptions): GiveBack {
  const cpuMicros =
    o.cpuMicros ??
    (() => {
      const u = process.cpuUsage()
      return u.user + u.system
    })
  const collect = o.collect === undefined ? fullCollection() : o.collect
  const heapBytes =
    o.heapBytes ??
    (() => {
      const m = process.memoryUsage()
      return { total: m.heapTotal, used: m.heapUsed }
    })
  const windowMs = o.windowMs ?? WINDOW_MS
  const quietWindows = Math.max(1, Math.ceil(o.quietMs / windowMs))
  let state = NOTHING_TO_GIVE_BACK
  let collections = 0
  let last = cpuMicros()
  let lastAt = performance.now()
  const timer = setInterval(() => {
    const now = cpuMicros()
    const at = performance.now()
    const share = (now - last) / 1000 / Math.max(1, at - lastAt)
    const next = afterWindow(state, share, quietWindows)
    state = next.state
    if (next.collect && collect) {
      const before = heapBytes()
      collect()
      collections++
      const after = heapBytes()
      const mb = (b: number) => Math.round(b / 1048576)
      o.log.debug?.(
        { heapTotalMb: [mb(before.total), mb(after.total)], heapUsedMb: [mb(before.used), mb(after.used)] },
        'memory given back after a busy spell',
      )
    }
    // The collection's own CPU is not counted as the next window's work.
    last = cpuMicros()
    lastAt = performance.now()
  }, windowMs)
  timer.unref()
  if (!collect) o.log.debug?.('no full collection available: memory is left to V8')
  return {
    get collections() {
      return collections
    },
    stop: () => clearInterval(timer),
  }
}
