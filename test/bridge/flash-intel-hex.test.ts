// Intel HEX in and out (bridge/flash/intel-hex.ts): what avrdude and avr-objcopy write parses to
// the bytes they mean, what toIntelHex writes parses back to the same bytes, and every bad file is
// refused with the line and what is wrong with it.
import fc from 'fast-check'
import t from 'tap'
import { parseIntelHex, toIntelHex } from '../../bridge/flash/intel-hex.ts'

/** A record with its checksum computed here, so a case can be built from its fields. */
function rec(type: number, offset: number, data: number[]): string {
  const bytes = [data.length, offset >> 8, offset & 0xff, type, ...data]
  const sum = (0x100 - (bytes.reduce((a, b) => a + b, 0) & 0xff)) & 0xff
  return `:${[...bytes, sum]
    .map((b) => b.toString(16).padStart(2, '0'))
    .join('')
    .toUpperCase()}`
}

t.test('data records land at their addresses; gaps are erased flash; first and size', async (t) => {
  const text = [rec(0, 0x0010, [1, 2, 3]), rec(0, 0x0000, [0xaa]), rec(1, 0, [])].join('\r\n')
  const r = parseIntelHex(text)
  t.ok(r.ok)
  if (!r.ok) return
  t.equal(r.value.size, 0x13)
  t.equal(r.value.first, 0)
  t.equal(r.value.bytes[0], 0xaa)
  t.same([...r.value.bytes.subarray(1, 0x10)], new Array(15).fill(0xff), 'the gap reads as erased flash')
  t.same([...r.value.bytes.subarray(0x10)], [1, 2, 3])
})

t.test('extended addresses (types 02 and 04) and start addresses (03, 05)', async (t) => {
  const text = [
    rec(2, 0, [0x10, 0x00]), // segment 0x1000 → base 0x10000
    rec(0, 0x0002, [7]),
    rec(4, 0, [0x00, 0x02]), // linear 0x0002 → base 0x20000
    rec(0, 0x0000, [8, 9]),
    rec(3, 0, [0, 0, 0x7e, 0]), // where a CPU would start: not data
    rec(5, 0, [0, 0, 0, 0]),
    rec(1, 0, []),
  ].join('\n')
  const r = parseIntelHex(text)
  t.ok(r.ok)
  if (!r.ok) return
  t.equal(r.value.first, 0x10002)
  t.equal(r.value.size, 0x20002)
  t.equal(r.value.bytes[0x10002], 7)
  t.same([...r.value.bytes.subarray(0x20000)], [8, 9])
})

t.test('a bootloader placed high: first is its start', async (t) => {
  const r = parseIntelHex(`${rec(0, 0x7e00, [0x11, 0x24])}\n${rec(0, 0x7ffe, [4, 4])}\n:00000001FF\n`)
  t.ok(r.ok)
  if (r.ok) t.same([r.value.first, r.value.size], [0x7e00, 0x8000])
})

t.test('what toIntelHex writes parses back to the same bytes', async (t) => {
  fc.assert(
    fc.property(
      fc.uint8Array({ minLength: 1, maxLength: 600 }),
      fc.integer({ min: 0, max: 0x30000 }),
      (bytes, start) => {
        const r = parseIntelHex(toIntelHex(bytes, start))
        if (!r.ok) return false
        return (
          r.value.first === start &&
          r.value.size === start + bytes.length &&
          Buffer.from(r.value.bytes.subarray(start)).equals(Buffer.from(bytes))
        )
      },
    ),
  )
  // A run across a 64 KiB boundary is split there, with an extended address record between.
  const hex = toIntelHex(new Uint8Array(40).fill(0x5a), 0xfff0)
  t.match(
    hex,
    /^:10FFF000(5A){16}[0-9A-F]{2}\n:020000040001F9\n:10000000(5A){16}[0-9A-F]{2}\n:08001000(5A){8}[0-9A-F]{2}\n:00000001FF\n$/,
  )
})

t.test('avr-objcopy output as Debian ships it parses (optiboot, with its version word)', async (t) => {
  // The first and last lines of /usr/share/arduino/.../optiboot_atmega328.hex, as text.
  const text =
    ':107E0000112484B714BE81FFFDD085E080938100EA\n:027FFE00040479\n:0400000300007E007B\n:00000001FF\n'
  const r = parseIntelHex(text)
  t.ok(r.ok)
  if (!r.ok) return
  t.same([...r.value.bytes.subarray(0x7e00, 0x7e04)], [0x11, 0x24, 0x84, 0xb7])
  t.same([...r.value.bytes.subarray(0x7ffe)], [4, 4], 'optiboot 4.4')
})

t.test('bad files are refused with the line and the fault', async (t) => {
  const good = rec(0, 0, [1, 2])
  // Data past maxSize is over a limit (TOO_LARGE); every other fault is a bad file (BAD_INPUT).
  const cases: Array<[string, RegExp, 'TOO_LARGE'?]> = [
    ['hello world\n', /^x\.hex line 1: not an Intel HEX record \("hello world"\)$/],
    [`${good}\n:10000000zz\n`, /^x\.hex line 2: not an Intel HEX record/],
    [`${good}\n:0\n`, /^x\.hex line 2: not an Intel HEX record/],
    [`${good.slice(0, -2)}00\n`, /^x\.hex line 1: bad checksum$/],
    [':0300000001020F\n', /^x\.hex line 1: the record says 3 data bytes but holds 2$/],
    [`\n\n${rec(7, 0, [])}\n`, /^x\.hex line 3: unknown record type 0x07$/],
    [`${rec(1, 0, [])}\n${good}\n`, /^x\.hex line 2: a record after the end-of-file record$/],
    [`${rec(1, 0, [5])}\n`, /^x\.hex line 1: an end-of-file record with data$/],
    [`${rec(4, 0, [1])}\n`, /^x\.hex line 1: an address record \(type 04\) needs 2 data bytes, not 1$/],
    [
      `${rec(0, 0x7ff0, new Array(16).fill(0))}\n${rec(0, 0x8000, [1])}\n`,
      /^x\.hex line 2: data at 0x8000-0x8000, past the end \(0x7fff\)$/,
      'TOO_LARGE',
    ],
    [
      `${rec(4, 0, [0xff, 0xff])}\n${rec(0, 0, [1])}\n`,
      /^x\.hex line 2: data at 0xffff0000-0xffff0000, past the end/,
      'TOO_LARGE',
    ],
    ['', /^x\.hex: no data records$/],
    [`${rec(1, 0, [])}\n`, /^x\.hex: no data records$/],
  ]
  for (const [text, re, over] of cases) {
    const r = parseIntelHex(text, { where: 'x.hex', maxSize: 0x8000 })
    t.equal(r.ok, false, JSON.stringify(text))
    if (!r.ok) {
      t.match(r.error, re, JSON.stringify(text))
      t.equal(r.code, over ?? 'BAD_INPUT', JSON.stringify(text))
    }
  }
  const long = parseIntelHex(`:${'G'.repeat(500)}`)
  t.equal(long.ok, false)
  if (!long.ok) t.ok(long.error.length < 120, 'a long bad line is shown cut short')
})
