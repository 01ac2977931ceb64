// Messages that only say the latest state of something (a run's change on svc/runs/…, QoS 0)
// are kept, the latest per topic, while the link to the broker cannot take them, and sent once
// it can. QoS 0 promises no delivery (MQTT 3.1.1 §4.3.1), and a subscriber of svc/runs/… wants
// where each run is now: a burst that outruns the broker costs one message per run, not one per
// change queued in the client without bound.

export interface CoalescerOptions {
  /** True while a message sent now would wait (offline, or the socket backed up). */
  busy: () => boolean
  send: (topic: string, payload: string) => void
  /** Topics kept at most; past it the oldest is dropped. */
  max: number
}

export interface CoalescedCounts {
  /** Messages kept while busy, then sent. */
  sent: number
  /** Kept messages a newer one on the same topic replaced. */
  replaced: number
  /** Kept messages dropped past `max`. */
  dropped: number
}

export interface Coalescer {
  /** Sends now, or keeps it as its topic's latest while busy. */
  offer(topic: string, payload: string): void
  /**
   * The link may take more: sends what was kept, oldest first, until it is busy again. Returns
   * the counts since the link was last caught up once everything kept is sent, else null.
   */
  flush(): CoalescedCounts | null
  /** Topics kept now. */
  kept(): number
}

export function coalescer(o: CoalescerOptions): Coalescer {
  const kept = new Map<string, string>()
  let counts: CoalescedCounts = { sent: 0, replaced: 0, dropped: 0 }

  return {
    offer(topic, payload) {
      if (kept.size === 0 && !o.busy()) return o.send(topic, payload)
      // Re-inserted: the order kept is the order of each topic's latest change.
      if (kept.delete(topic)) counts.replaced++
      kept.set(topic, payload)
      if (kept.size > o.max) {
        const oldest = kept.keys().next().value as string
        kept.delete(oldest)
        counts.dropped++
      }
    },
    flush() {
      if (kept.size === 0) return null
      for (const [topic, payload] of kept) {
        if (o.busy()) return null
        kept.delete(topic)
        counts.sent++
        o.send(topic, payload)
      }
      const done = counts
      counts = { sent: 0, replaced: 0, dropped: 0 }
      return done
    },
    kept: () => kept.size,
  }
}
