// Strings a busy hub keeps for a while, stored as one piece. V8 keeps a string made by `+`, a
// template or JSON.stringify (which builds its output in parts of 32, 64, 128… characters) as a
// tree of those parts, 32 bytes a node, until something reads it as a whole. The once-only marks
// (hub/engine/README.md, "The write budget") keep tens of thousands of such strings for
// FORGET_AFTER_MS: as trees, a mark took 309 bytes of heap; flat, 215 (measured by
// test/engine/once-marks.test.ts; bench/README.md, "endurance: once-only marks flat").

/**
 * `s` copied into one flat string. JSON.parse makes each string it reads a new flat one, and
 * JSON.stringify escapes a lone surrogate, so any string comes back exactly; V8 stores the copy one
 * byte a character when every character fits. The copy is made in V8's heap alone: through a
 * Buffer, each copy took a slice of an 8 KiB pool slab from malloc, held until V8 next collected
 * (860 KB for 2,000 copies of 200 characters, test/engine/once-marks.test.ts).
 */
export function flat(s: string): string {
  return JSON.parse(JSON.stringify(s)) as string
}
