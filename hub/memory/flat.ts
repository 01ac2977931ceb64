// Strings a busy hub keeps for a while, stored as one piece. V8 keeps a string made by `+`, a
// template or JSON.stringify (which builds its output in parts of 32, 64, 128… characters) as a
// tree of those parts, 32 bytes a node, until something reads it as a whole. The once-only marks
// (hub/engine/README.md, "The write budget") keep tens of thousands of such strings for
// FORGET_AFTER_MS: as trees, a mark took 309 bytes of heap; flat, 215 (measured by
// test/engine/once-marks.test.ts; bench/README.md, "endurance: once-only marks flat").

/**
 * `s` copied into one flat string. Through UTF-16 code units, so any string comes back exactly
 * (a lone surrogate too); V8 stores the copy one byte a character when every character fits.
 */
export function flat(s: string): string {
  return Buffer.from(s, 'utf16le').toString('utf16le')
}
