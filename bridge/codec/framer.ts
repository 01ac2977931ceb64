// Bytes → lines with a cap. bridge/README.md, "The board line protocol": a line longer than the cap is
// dropped whole and counted, never buffered without bound. The framer holds at most `cap`
// bytes of the line in progress; once a line passes the cap it discards until the next
// newline, so a board that never sends a newline costs nothing but the count.
// Pure: no streams, no timers. The firmware's svc_line.h implements the same rules in C++.

export const NEWLINE = 0x0a
const CR = 0x0d
export const DEFAULT_LINE_CAP = 1024

export interface FramerCounts {
  /** Complete non-blank lines within the cap (valid or not). */
  lines: number
  /** Lines dropped whole because they passed the cap. */
  oversized: number
}

export interface LineFramer {
  /** Feeds bytes; calls `onLine` for every complete line within the cap (without `\n` or a trailing `\r`). */
  push(chunk: Uint8Array, onLine: (line: Buffer) => void): void
  /** Forgets the line in progress (the port was reopened: its tail belongs to no line). */
  reset(): void
  /** Bytes of the line in progress that are held (always ≤ cap). */
  held(): number
  counts(): FramerCounts
}

/**
 * `cap` counts the line's bytes without the newline (and without a trailing `\r`, so
 * Arduino's `println` framing gets the same cap as `\n`).
 */
export function createLineFramer(cap: number = DEFAULT_LINE_CAP): LineFramer {
  if (!Number.isInteger(cap) || cap < 1)
    throw new RangeError(`line cap must be a positive integer, got ${cap}`)
  // One byte of slack for the `\r` of a `\r\n` line exactly at the cap.
  const hold = Buffer.allocUnsafe(cap + 1)
  let used = 0
  let discarding = false
  const counts: FramerCounts = { lines: 0, oversized: 0 }

  function finish(line: Buffer, onLine: (line: Buffer) => void): void {
    let end = line.length
    if (end > 0 && line[end - 1] === CR) end--
    if (end > cap) {
      counts.oversized++
      return
    }
    // Blank lines (a bare `\n` or `\r\n`) carry nothing: skipped, not counted.
    if (end === 0) return
    counts.lines++
    onLine(end === line.length ? line : line.subarray(0, end))
  }

  return {
    push(chunk, onLine) {
      let start = 0
      const n = chunk.length
      while (start < n) {
        const nl = chunk.indexOf(NEWLINE, start)
        const stop = nl === -1 ? n : nl
        const len = stop - start
        if (discarding) {
          if (nl === -1) return
          discarding = false
          counts.oversized++
          start = nl + 1
          continue
        }
        if (used + len > cap + 1) {
          // Past the cap (and its `\r` slack): drop what is held and skip to the newline.
          used = 0
          if (nl === -1) {
            discarding = true
            return
          }
          counts.oversized++
          start = nl + 1
          continue
        }
        if (nl === -1) {
          Buffer.prototype.set.call(hold, chunk.subarray(start, stop), used)
          used += len
          return
        }
        if (used === 0) {
          // The common case: a whole line inside one chunk, no copy.
          finish(Buffer.from(chunk.buffer, chunk.byteOffset + start, len), onLine)
        } else {
          Buffer.prototype.set.call(hold, chunk.subarray(start, stop), used)
          used += len
          finish(Buffer.from(hold.subarray(0, used)), onLine)
          used = 0
        }
        start = nl + 1
      }
    },
    reset() {
      used = 0
      discarding = false
    },
    held: () => used,
    counts: () => ({ ...counts }),
  }
}
