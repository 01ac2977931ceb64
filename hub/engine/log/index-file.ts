// A sealed segment's run index as one file beside it (pure): the finished runs whose summary the
// segment holds, sorted by position (`<t>!<id>`, run-index.ts), written once when the segment is
// full and dropped with it (hub/engine/README.md, "The run index").
//
//   file   = header line (JSON, `\n`), body
//   header = { v, seg, count, min, max, pairs, crc }   pairs: the (sop, state) the entries hold
//   body   = deflated JSON: [[position, pair, first segment, records?], …] in ascending position
//
// `records` (version 2): where the run's records are in the log, for a run whose records never
// reached LevelDB (hub/engine/README.md, "The run index"). A file of version 1 has none: every
// run it lists has its records' locators in LevelDB.
//
// The header alone says whether a query needs the body (its positions and pairs), so an open
// reads a few hundred bytes of each file, not the file. `crc` covers the body: a file that fails
// it, or any other check, is built again from its segment.
import { once } from 'node:events'
import { crc32, createDeflate, inflateSync } from 'node:zlib'
import type { RunState } from '../../../sops/run/states.ts'

/** A finished run as the index holds it. */
export interface IndexEntry {
  /** `<t>!<id>` (run-index.ts `position`). */
  pos: string
  sop: string
  state: RunState
  /**
   * The segment holding the run's first record. Retention removes a run with that segment, so an
   * entry whose first segment is gone stands for a run already removed, and is passed over.
   */
  fs: number
  /**
   * The locators of the run's records (store-layout.ts `locatorText`), its deltas in order and its
   * summary last, separated by spaces: set when LevelDB holds none of them, the index is then
   * the only place the run is found.
   */
  recs?: string
}

/** An entry's `recs` read back: the run's deltas' locators in order, and its summary's. */
export function splitRecs(recs: string): { deltas: string[]; summary: string } {
  const all = recs.split(' ')
  return { deltas: all.slice(0, -1), summary: all.at(-1)! }
}

export interface IndexHeader {
  v: 1 | 2
  seg: number
  count: number
  /** The lowest and highest positions (empty strings: no entries). */
  min: string
  max: string
  pairs: [string, RunState][]
  crc: number
}

/** One key per (sop, state) pair: a SOP name never holds a NUL (run-index.ts `checkFilter`). */
export const pairKey = (sop: string, state: RunState) => `${sop}\u0000${state}`

export const INDEX_FILE = /^([0-9a-f]{8})\.idx$/
export const indexFileName = (n: number) => `${n.toString(16).padStart(8, '0')}.idx`

/** Rows serialised and deflated this many at a time. */
const ROWS_AT_ONCE = 1024

/**
 * The file for segment `seg`; `entries` in ascending position. Deflated off the main thread, a
 * chunk of rows at a time: as one JSON text with its rows as arrays, the body of a full 8 MiB
 * segment (about 50,000 runs, 5.5 MB of text) was all alive at once, on top of the segment's
 * entries and the next segment's, when the heap is fullest.
 */
export async function encodeIndexFile(seg: number, entries: readonly IndexEntry[]): Promise<Buffer> {
  const pairIndex = new Map<string, number>()
  const pairs: [string, RunState][] = []
  const row = (e: IndexEntry) => {
    const k = pairKey(e.sop, e.state)
    let p = pairIndex.get(k)
    if (p === undefined) {
      p = pairs.length
      pairIndex.set(k, p)
      pairs.push([e.sop, e.state])
    }
    return e.recs === undefined ? [e.pos, p, e.fs] : [e.pos, p, e.fs, e.recs]
  }
  const z = createDeflate()
  const out: Buffer[] = []
  z.on('data', (b: Buffer) => out.push(b))
  const ended = once(z, 'end')
  for (let i = 0; i < entries.length; i += ROWS_AT_ONCE) {
    const text = JSON.stringify(entries.slice(i, i + ROWS_AT_ONCE).map(row))
    // One JSON array across the chunks: `[` before the first, `,` between, `]` after the last.
    if (!z.write(`${i === 0 ? '[' : ','}${text.slice(1, -1)}`)) await once(z, 'drain')
  }
  z.end(entries.length === 0 ? '[]' : ']')
  await ended
  const body = Buffer.concat(out)
  const header: IndexHeader = {
    v: 2,
    seg,
    count: entries.length,
    min: entries[0]?.pos ?? '',
    max: entries.at(-1)?.pos ?? '',
    pairs,
    crc: crc32(body),
  }
  return Buffer.concat([Buffer.from(`${JSON.stringify(header)}\n`), body])
}

/** The header of a file's first bytes, or null when they do not hold a whole, valid one. */
export function decodeIndexHeader(head: Buffer, seg: number): IndexHeader | null {
  const nl = head.indexOf(0x0a)
  if (nl < 0) return null
  try {
    const h = JSON.parse(head.toString('utf8', 0, nl)) as IndexHeader
    const ok =
      (h.v === 1 || h.v === 2) &&
      h.seg === seg &&
      Number.isSafeInteger(h.count) &&
      typeof h.min === 'string' &&
      typeof h.max === 'string' &&
      Array.isArray(h.pairs) &&
      Number.isSafeInteger(h.crc)
    return ok ? h : null
  } catch {
    return null
  }
}

/** A whole file's entries, checked against its header; throws naming what does not agree. */
export function decodeIndexFile(file: Buffer, header: IndexHeader): IndexEntry[] {
  const body = file.subarray(file.indexOf(0x0a) + 1)
  if (crc32(body) !== header.crc) throw new Error(`index of segment ${header.seg}: its body fails its check`)
  const rows = JSON.parse(inflateSync(body).toString('utf8')) as [string, number, number, string?][]
  if (rows.length !== header.count)
    throw new Error(
      `index of segment ${header.seg}: ${rows.length} entries where its header says ${header.count}`,
    )
  return rows.map(([pos, p, fs, recs]) => {
    const pair = header.pairs[p]
    if (!pair)
      throw new Error(`index of segment ${header.seg}: an entry names pair ${p}, which it does not have`)
    return recs === undefined
      ? { pos, sop: pair[0], state: pair[1], fs }
      : { pos, sop: pair[0], state: pair[1], fs, recs }
  })
}
