// Intel HEX, the format avrdude and the Arduino tools read and write firmware images in: text in,
// the image's bytes from address 0 out, and back. Pure; a bad file is an error that names the line
// and what is wrong with it, so a user who uploads one can find the fault.
import { type Failure, fail } from '../../errors/codes.ts'

export interface HexImage {
  /** The image from address 0: every address up to the highest one with data; gaps are 0xFF (erased flash). */
  bytes: Uint8Array
  /** bytes.length: one past the highest address that holds data. */
  size: number
  /** The lowest address that holds data (0 for a sketch; a bootloader's starts high). */
  first: number
}

/**
 * A bad file is the user's input (`BAD_INPUT`); `TOO_LARGE`: the image reaches past `maxSize` (a
 * caller names the board's limit).
 */
export type HexResult = { ok: true; value: HexImage } | Failure<'BAD_INPUT' | 'TOO_LARGE'>

export interface ParseOptions {
  /** Named in every error, e.g. the file's name (default `Intel HEX`). */
  where?: string
  /** No data at or past this address (default 256 KiB, the largest AVR flash). */
  maxSize?: number
}

const RECORD = /^:([0-9A-Fa-f]{2})+$/

/** Parses Intel HEX text (records 00-05; blank lines and CR LF line ends allowed). */
export function parseIntelHex(text: string, opts: ParseOptions = {}): HexResult {
  const where = opts.where ?? 'Intel HEX'
  const maxSize = opts.maxSize ?? 256 * 1024
  const bad = (line: number, what: string): Failure<'BAD_INPUT'> =>
    fail('BAD_INPUT', `${where} line ${line}: ${what}`)
  // Records are gathered first and laid out once the extent is known: one allocation, no copies.
  const chunks: Array<{ at: number; data: Uint8Array }> = []
  let base = 0
  let ended = false
  let size = 0
  let first = Number.POSITIVE_INFINITY
  const lines = text.split('\n')
  for (let i = 0; i < lines.length; i++) {
    const n = i + 1
    const line = lines[i]!.replace(/\r$/, '').trim()
    if (line === '') continue
    if (ended) return bad(n, 'a record after the end-of-file record')
    if (!RECORD.test(line)) {
      const shown = line.length > 20 ? `${line.slice(0, 20)}…` : line
      return bad(n, `not an Intel HEX record (${JSON.stringify(shown)})`)
    }
    const rec = Buffer.from(line.slice(1), 'hex')
    const len = rec[0]!
    if (rec.length !== len + 5) return bad(n, `the record says ${len} data bytes but holds ${rec.length - 5}`)
    let sum = 0
    for (const b of rec) sum = (sum + b) & 0xff
    if (sum !== 0) return bad(n, 'bad checksum')
    const type = rec[3]!
    const offset = (rec[1]! << 8) | rec[2]!
    const data = rec.subarray(4, 4 + len)
    switch (type) {
      case 0: {
        const at = base + offset
        if (len === 0) break
        if (at + len > maxSize)
          return {
            ...bad(n, `data at 0x${hex4(at)}-0x${hex4(at + len - 1)}, past the end (0x${hex4(maxSize - 1)})`),
            code: 'TOO_LARGE',
          }
        chunks.push({ at, data: new Uint8Array(data) })
        size = Math.max(size, at + len)
        first = Math.min(first, at)
        break
      }
      case 1:
        if (len !== 0) return bad(n, 'an end-of-file record with data')
        ended = true
        break
      case 2:
      case 4:
        if (len !== 2) return bad(n, `an address record (type 0${type}) needs 2 data bytes, not ${len}`)
        base = type === 2 ? ((data[0]! << 8) | data[1]!) << 4 : ((data[0]! << 8) | data[1]!) * 0x10000
        break
      case 3:
      case 5:
        // Start addresses: where a CPU would begin; an AVR always starts at its reset vector.
        break
      default:
        return bad(n, `unknown record type 0x${type.toString(16).padStart(2, '0')}`)
    }
  }
  if (size === 0) return fail('BAD_INPUT', `${where}: no data records`)
  const bytes = new Uint8Array(size).fill(0xff)
  for (const c of chunks) bytes.set(c.data, c.at)
  return { ok: true, value: { bytes, size, first } }
}

/**
 * Intel HEX of `bytes` placed at `start` (default 0): 16 data bytes a record, an extended linear
 * address record wherever a 64 KiB boundary is crossed, and the end-of-file record.
 */
export function toIntelHex(bytes: Uint8Array, start = 0): string {
  const out: string[] = []
  let upper = 0
  let i = 0
  while (i < bytes.length) {
    const at = start + i
    const hi = Math.floor(at / 0x10000)
    if (hi !== upper) {
      out.push(record(0, 4, Uint8Array.of(hi >> 8, hi & 0xff)))
      upper = hi
    }
    // A record never crosses a 64 KiB boundary: its offset is 16 bits.
    const len = Math.min(16, bytes.length - i, 0x10000 - (at % 0x10000))
    out.push(record(at & 0xffff, 0, bytes.subarray(i, i + len)))
    i += len
  }
  out.push(':00000001FF')
  return `${out.join('\n')}\n`
}

function record(offset: number, type: number, data: Uint8Array): string {
  const rec = Uint8Array.of(data.length, offset >> 8, offset & 0xff, type, ...data, 0)
  let sum = 0
  for (let k = 0; k < rec.length - 1; k++) sum = (sum + rec[k]!) & 0xff
  rec[rec.length - 1] = (0x100 - sum) & 0xff
  return `:${Buffer.from(rec).toString('hex').toUpperCase()}`
}

function hex4(n: number): string {
  return n.toString(16).padStart(4, '0')
}
