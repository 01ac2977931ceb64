// Which of the history log's segments retention drops (pure): the oldest first, while the log is
// over its size or the segment's newest record is past the age bound, never the segment being
// written (hub/engine/README.md, "Retention").
import type { SegmentInfo } from './segment-log.ts'

export interface HistoryBounds {
  /** Finished runs older than this go (by the time their first record was written). */
  maxAgeMs: number
  /** The log's size past which the oldest segments go, whatever their age. */
  maxBytes: number
  /** A segment's size before the next one is started. */
  segmentBytes: number
}

const MiB = 1024 * 1024

/** hub.toml `[history]` in the units the store works in. */
export function historyBounds(h: { maxAgeDays: number; maxMb: number; segmentMb: number }): HistoryBounds {
  return {
    maxAgeMs: h.maxAgeDays * 86_400_000,
    maxBytes: h.maxMb * MiB,
    segmentBytes: Math.max(64 * 1024, Math.round(h.segmentMb * MiB)),
  }
}

export function segmentsToDrop(
  segments: readonly SegmentInfo[],
  head: number,
  now: number,
  bounds: HistoryBounds,
): number[] {
  let total = 0
  for (const s of segments) total += s.bytes
  const out: number[] = []
  for (const s of segments) {
    if (s.n >= head) break
    if (total <= bounds.maxBytes && s.lastWriteAt >= now - bounds.maxAgeMs) break
    out.push(s.n)
    total -= s.bytes
  }
  return out
}

/** How often retention looks: often enough for a short age bound, at most once a minute. */
export function retentionEveryMs(bounds: HistoryBounds): number {
  return Math.max(1000, Math.min(60_000, Math.floor(bounds.maxAgeMs / 4)))
}
