// A run's id: an RFC 9562 UUIDv7 whose time is the run's creation time. Time-ordered, so a run's
// LevelDB keys land after the ones before it instead of among them (hub/engine/README.md, "The
// write budget"); made from the creation time, so the id alone says where the run index holds
// the run (run-index.ts `idPosition`). Ids made in the same millisecond count up from a random
// start, as the uuid library's own clock does: runs created together keep their order.
import { randomFillSync, randomInt } from 'node:crypto'
import { v7 as uuidv7 } from 'uuid'

let lastMs = -1
let lastSeq = 0

/**
 * The ids' random bytes, drawn from the system's generator POOL_BYTES at a time. The library
 * draws 16 bytes a call, which was 3% of the main thread in a burst (bench/README.md, "peer: a
 * lone event's round trips").
 */
const POOL_BYTES = 4096
const pool = new Uint8Array(POOL_BYTES)
let used = POOL_BYTES

function random16(): Uint8Array {
  if (used + 16 > POOL_BYTES) {
    randomFillSync(pool)
    used = 0
  }
  used += 16
  return pool.subarray(used - 16, used)
}

export function runId(createdAt: number): string {
  const msecs = Math.max(0, Math.floor(createdAt))
  // 2^30 from a random start: a million runs in one millisecond would not wrap it.
  lastSeq = msecs === lastMs ? lastSeq + 1 : randomInt(2 ** 30)
  lastMs = msecs
  return uuidv7({ msecs, seq: lastSeq, random: random16() })
}
