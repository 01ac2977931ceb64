// A seeded PRNG for tests whose faults or cut points are drawn at random: the seed is printed,
// so a failing run can be repeated.

/** mulberry32: small, fast, good enough to make a schedule repeatable. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}
