// Events waiting for the broker. `publish` rejecting (broker down) must not lose QoS1 events:
// they stay queued in order and are retried with backoff. The queue is bounded: past
// `max` events the OLDEST event is dropped and counted (fresh machine state beats stale state,
// and memory on a Pi-class hub is finite). Retained availability messages are outside the bound
// and coalesced per topic (only the latest state matters), so a full queue never hides a board
// going offline.
// Up to `window` publishes are awaited at once; after a failure nothing new is sent until the
// in-flight ones settle, then the failed ones go back to the head in their original order.
// (An event that succeeded while an earlier one failed is not repeated, so under broker
// failure two events of one board may arrive swapped; never lost, never duplicated by us.)
// A slow broker is not a down broker: while publishes succeed and `highWater` events wait,
// `underPressure()` tells the links to stop reading their ports (backpressure down to the
// tty), so a burst is delayed rather than dropped. Only while the broker fails does the bound
// drop events, because a paused port would lose them uncounted in the OS buffer.
import type { PublishFn, QueueStats } from './types.ts'

export interface QueueItem {
  topic: string
  payload: string
  qos: 0 | 1
  retain: boolean
  /** Whose event this is, for per-board counts. */
  board: string
  seq: number
}

export interface PublishQueueOptions {
  publish: PublishFn
  max: number
  window: number
  /** Held events (waiting or in flight) at which readers are asked to pause (while publishes succeed). */
  highWater: number
  retryInitialMs: number
  retryMaxMs: number
  onDelivered(item: QueueItem): void
  onDropped(item: QueueItem): void
  onFailed(item: QueueItem, err: unknown): void
}

export interface PublishQueue {
  push(item: Omit<QueueItem, 'seq'>): void
  stats(): QueueStats
  /** True while the broker keeps up too slowly: the caller should stop reading for now. */
  underPressure(): boolean
  /** Calls `fn` once, when the pressure is off (or at once if it is). */
  whenRelieved(fn: () => void): void
  /** Resolves true when everything queued was delivered, false when `timeoutMs` passed first. */
  drain(timeoutMs: number): Promise<boolean>
  close(): void
}

export function createPublishQueue(o: PublishQueueOptions): PublishQueue {
  let queue: QueueItem[] = []
  let head = 0 // queue[head…] are pending; shifting arrays is O(n), so we advance an index
  let failed: QueueItem[] = []
  let inflight = 0
  let seq = 0
  let events = 0 // non-retained items pending + in flight + failed, for the bound
  let retryDelay = o.retryInitialMs
  let retryTimer: NodeJS.Timeout | undefined
  let closed = false
  const st = { delivered: 0, dropped: 0, retries: 0 }
  let idleWaiters: Array<() => void> = []
  let reliefWaiters: Array<() => void> = []
  const failing = (): boolean => failed.length > 0 || retryTimer !== undefined
  // `events` counts waiting and in-flight events alike: the bound is on what is held in memory.
  const underPressure = (): boolean => events >= o.highWater && !failing()

  function relieve(): void {
    if (reliefWaiters.length === 0) return
    if (events >= o.highWater / 2 && !failing()) return
    const w = reliefWaiters
    reliefWaiters = []
    for (const f of w) f()
  }

  const pending = (): number => queue.length - head

  function compact(): void {
    if (head > 1024 && head * 2 > queue.length) {
      queue = queue.slice(head)
      head = 0
    }
  }

  function settleIdle(): void {
    if (pending() === 0 && inflight === 0 && failed.length === 0) {
      const w = idleWaiters
      idleWaiters = []
      for (const f of w) f()
    }
  }

  function pump(): void {
    while (
      !closed &&
      retryTimer === undefined &&
      failed.length === 0 &&
      inflight < o.window &&
      pending() > 0
    ) {
      const item = queue[head]!
      queue[head++] = undefined as unknown as QueueItem
      inflight++
      let p: Promise<void>
      try {
        p = o.publish(item.topic, item.payload, { qos: item.qos, retain: item.retain })
      } catch (err) {
        p = Promise.reject(err)
      }
      p.then(
        () => {
          inflight--
          if (!item.retain) events--
          retryDelay = o.retryInitialMs
          st.delivered++
          o.onDelivered(item)
          afterSettle()
        },
        (err: unknown) => {
          inflight--
          failed.push(item)
          o.onFailed(item, err)
          afterSettle()
        },
      )
    }
    compact()
  }

  function afterSettle(): void {
    if (failed.length > 0 && inflight === 0 && retryTimer === undefined && !closed) {
      retryTimer = setTimeout(() => {
        retryTimer = undefined
        failed.sort((a, b) => a.seq - b.seq)
        st.retries += failed.length
        queue = failed.concat(queue.slice(head))
        head = 0
        failed = []
        pump()
      }, retryDelay)
      retryDelay = Math.min(retryDelay * 2, o.retryMaxMs)
      relieve()
      return
    }
    pump()
    settleIdle()
    relieve()
  }

  /** Drops the oldest waiting event; false when every event is in flight. */
  function dropOldestEvent(): boolean {
    // Failed items are older than anything still pending.
    let i = failed.findIndex((x) => !x.retain)
    if (i >= 0) {
      o.onDropped(failed.splice(i, 1)[0]!)
      return true
    }
    for (i = head; i < queue.length; i++) {
      const x = queue[i]!
      if (!x.retain) {
        queue.splice(i, 1)
        o.onDropped(x)
        return true
      }
    }
    return false
  }

  return {
    push(item) {
      if (closed) return
      const full: QueueItem = { ...item, seq: seq++ }
      if (full.retain) {
        // Coalesce: a newer state replaces a pending older one for the same topic.
        for (let i = head; i < queue.length; i++) {
          if (queue[i]!.retain && queue[i]!.topic === full.topic) {
            queue.splice(i, 1)
            break
          }
        }
        failed = failed.filter((x) => !(x.retain && x.topic === full.topic))
      } else {
        events++
        while (events > o.max) {
          events--
          st.dropped++
          // In-flight events cannot be recalled: then the newcomer is the one dropped.
          if (!dropOldestEvent()) {
            o.onDropped(full)
            return
          }
        }
      }
      queue.push(full)
      pump()
    },
    underPressure,
    whenRelieved(fn) {
      reliefWaiters.push(fn)
      relieve()
    },
    stats: () => ({
      pending: pending() + failed.length,
      inflight,
      delivered: st.delivered,
      dropped: st.dropped,
      retries: st.retries,
    }),
    drain(timeoutMs) {
      if (pending() === 0 && inflight === 0 && failed.length === 0) return Promise.resolve(true)
      return new Promise((resolve) => {
        const t = setTimeout(() => {
          idleWaiters = idleWaiters.filter((f) => f !== done)
          resolve(false)
        }, timeoutMs)
        const done = (): void => {
          clearTimeout(t)
          resolve(true)
        }
        idleWaiters.push(done)
      })
    },
    close() {
      closed = true
      const w = reliefWaiters
      reliefWaiters = []
      for (const f of w) f()
      if (retryTimer) clearTimeout(retryTimer)
      retryTimer = undefined
    },
  }
}
