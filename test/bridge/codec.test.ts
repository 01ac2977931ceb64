// The line codec against the golden files (the same ones the firmware host test uses), and the
// framer against a plain reference model on random input.
import fc from 'fast-check'
import t from 'tap'
import {
  createLineFramer,
  DEFAULT_PROTOCOL,
  decodeBoardLine,
  decodeCommand,
  encodeCommand,
  encodeHello,
  encodeMessage,
  encodeReply,
  type Json,
  SUPPORTED_PROTOCOLS,
  splitFirmware,
} from '../../bridge/codec/index.ts'
import { answerCommand } from '../../boards/simulator/answer.ts'
import { createSimulatedBoard } from '../../boards/simulator/board.ts'
import { golden, goldenJson, goldenLines } from '../boards/golden.ts'

type Ev =
  | { event: 'hello'; board: string; fw: string; proto: number }
  | { event: 'message'; signal: string; text: string }

t.test('golden events decode to their values, and the TS encoders write the same bytes', async (t) => {
  const expected = goldenJson<Ev[]>('events.json')
  const lines = goldenLines('events.lines')
  t.equal(lines.length, expected.length)
  for (const [i, line] of lines.entries()) {
    const d = decodeBoardLine(Buffer.from(line, 'utf8'))
    const e = expected[i]!
    if (e.event === 'hello') {
      t.same(d, { ok: true, value: { kind: 'hello', hello: e } }, `line ${i + 1} hello`)
      t.equal(encodeHello(e.board, e.fw, e.proto), line + '\n')
    } else {
      t.same(d, { ok: true, value: { kind: 'message', message: e } }, `line ${i + 1} ${e.signal}`)
      t.equal(encodeMessage(e.signal, e.text), line + '\n')
    }
  }
})

t.test('a hello names the firmware and protocol; one without proto is from an older board', async (t) => {
  t.same(decodeBoardLine(Buffer.from('{"event":"hello","board":"vend1","fw":"svc-companion/0.1.0"}')), {
    ok: true,
    value: { kind: 'hello', hello: { event: 'hello', board: 'vend1', fw: 'svc-companion/0.1.0' } },
  })
  t.same(decodeBoardLine(Buffer.from('{"event":"hello","board":"vend1","fw":"x/2.0.0","proto":2}')), {
    ok: true,
    value: { kind: 'hello', hello: { event: 'hello', board: 'vend1', fw: 'x/2.0.0', proto: 2 } },
  })
  t.equal(DEFAULT_PROTOCOL, 1, 'no proto means protocol 1, what boards spoke before the field')
  t.ok(SUPPORTED_PROTOCOLS.includes(DEFAULT_PROTOCOL), 'the hub speaks what older boards speak')
  t.same(splitFirmware('svc-companion/0.2.0'), { name: 'svc-companion', version: '0.2.0' })
  t.same(splitFirmware('svc-companion/0.2.0-rc.1+b7'), { name: 'svc-companion', version: '0.2.0-rc.1+b7' })
  for (const fw of ['StandardFirmata 2.5', 'firmata', 'a/b/c', '/1.0', 'x/', 'x/1 0', ''])
    t.equal(splitFirmware(fw), undefined, `"${fw}" has no name/version`)
  t.equal(encodeHello('v'), '{"event":"hello","board":"v"}\n')
  t.equal(encodeHello('v', 'a/1'), '{"event":"hello","board":"v","fw":"a/1"}\n')
  t.equal(encodeHello('v', 'a/1', 1), '{"event":"hello","board":"v","fw":"a/1","proto":1}\n')
})

t.test('golden commands: the bridge encodes them byte for byte', async (t) => {
  const cmds = goldenJson<Array<{ id: number; cmd: string; args: Json }>>('commands.json')
  const lines = goldenLines('commands.lines')
  for (const [i, c] of cmds.entries()) {
    t.same(encodeCommand(c.id, c.cmd, c.args), { ok: true, value: lines[i] + '\n' }, `command ${c.id}`)
    t.same(decodeCommand(Buffer.from(lines[i]!)), { ok: true, value: c })
  }
})

t.test('golden replies: decoded by the bridge, and produced byte for byte by the simulator', async (t) => {
  const replies =
    goldenJson<Array<{ id: number; ok: boolean; result?: Json; error?: string }>>('replies.json')
  for (const [i, line] of goldenLines('replies.lines').entries()) {
    t.same(
      decodeBoardLine(Buffer.from(line)),
      { ok: true, value: { kind: 'reply', reply: replies[i] } },
      `reply ${replies[i]!.id}`,
    )
  }
  // The simulator plays the firmware: fed the same command bytes, it must print the same replies.
  const sim = createSimulatedBoard('vend1', { rate: 0 })
  let out = ''
  sim.opened((b) => (out += b.toString()))
  t.equal(out, `${goldenLines('events.lines')[0]}\n`, "the simulator says the firmware's hello")
  out = ''
  const input = Buffer.concat([golden('commands.lines'), golden('commands-bad.lines')])
  for (let i = 0; i < input.length; i += 7) sim.received(input.subarray(i, i + 7))
  sim.closed()
  t.equal(out, golden('replies.lines').toString('utf8'))
  t.equal(
    answerCommand('{"id":1,"cmd":"ping"', new Uint8Array(70)),
    undefined,
    'cut-off JSON is not answered',
  )
  t.same(
    answerCommand('{"id":2,"cmd":"reboot"}', new Uint8Array(70)),
    { id: 2, reply: { ok: false, code: 'BAD_INPUT', error: 'cmd: unknown command' } },
    'a refusal carries its code on this side; its line (above) only the text',
  )
})

t.test('golden framing: the TS framer keeps and drops the same lines as the firmware', async (t) => {
  // latin1 both sides: the file holds raw bytes (0xff, NUL) that UTF-8 decoding would mangle.
  const out = golden('framing-cap64.out').toString('latin1').split('\n').slice(0, -1)
  const summary = out.pop()!
  const got: string[] = []
  const input = golden('framing.in')
  // Byte by byte and whole: chunk boundaries must not matter.
  for (const step of [1, 3, 64, input.length]) {
    got.length = 0
    const f = createLineFramer(64)
    for (let i = 0; i < input.length; i += step)
      f.push(input.subarray(i, i + step), (l) => got.push(l.toString('latin1')))
    t.same(got, out, `lines, chunks of ${step}`)
    const c = f.counts()
    t.equal(`# lines ${c.lines} oversized ${c.oversized}`, summary, `counts, chunks of ${step}`)
    t.ok(f.held() <= 65, 'never holds more than the cap (+ the \\r slack)')
  }
})

// The reference: split on \n, strip one \r, drop blanks, drop > cap; the unterminated tail is not a line.
function reference(bytes: Uint8Array, cap: number): { lines: string[]; oversized: number } {
  const parts = Buffer.from(bytes).toString('latin1').split('\n')
  parts.pop()
  const lines: string[] = []
  let oversized = 0
  for (let p of parts) {
    if (p.endsWith('\r')) p = p.slice(0, -1)
    if (p.length > cap) oversized++
    else if (p.length > 0) lines.push(p)
  }
  return { lines, oversized }
}

t.test('framer = reference model for any bytes and any chunking', async (t) => {
  const byte = fc.oneof(
    fc.constant(0x0a),
    fc.constant(0x0d),
    fc.constant(0x41),
    fc.integer({ min: 0, max: 255 }),
  )
  fc.assert(
    fc.property(
      fc.uint8Array({ maxLength: 400 }).map((a) => a),
      fc.array(byte, { maxLength: 300 }),
      fc.integer({ min: 1, max: 40 }),
      fc.array(fc.integer({ min: 1, max: 50 }), { minLength: 1, maxLength: 20 }),
      (a, b, cap, cuts) => {
        const bytes = Buffer.concat([Buffer.from(a), Buffer.from(b)])
        const f = createLineFramer(cap)
        const got: string[] = []
        let i = 0
        let k = 0
        while (i < bytes.length) {
          const n = cuts[k++ % cuts.length]!
          f.push(bytes.subarray(i, i + n), (l) => got.push(Buffer.from(l).toString('latin1')))
          i += n
          if (f.held() > cap + 1) return false
        }
        const ref = reference(bytes, cap)
        return (
          JSON.stringify(got) === JSON.stringify(ref.lines) &&
          f.counts().oversized === ref.oversized &&
          f.counts().lines === ref.lines.length
        )
      },
    ),
    { numRuns: 2000 },
  )
  t.pass('2000 random inputs agree with the reference')
})

t.test('bad board lines are rejected with what was wrong', async (t) => {
  const cases: Array<[string | Buffer, RegExp]> = [
    ['not json', /^not JSON$/],
    ['[1,2]', /^not a JSON object$/],
    ['"str"', /^not a JSON object$/],
    ['null', /^not a JSON object$/],
    [Buffer.from([0x7b, 0xff, 0x7d]), /^not UTF-8$/],
    ['{"event":"message","signal":"coin"}', /^message: \/ must have required properties text$/],
    ['{"event":"message","signal":"a/b","text":"x"}', /^message: \/signal /],
    ['{"event":"message","signal":"#","text":"x"}', /^message: \/signal /],
    ['{"event":"message","signal":"","text":"x"}', /^message: \/signal /],
    ['{"event":"message","signal":"coin","text":5}', /^message: \/text /],
    ['{"event":"hello"}', /^hello: \/ must have required properties board$/],
    [
      '{"event":"hello","board":"v","proto":"1"}',
      /^hello: \/proto must be an integer from 1 to 255 .*, got "1"$/,
    ],
    [
      '{"event":"hello","board":"v","proto":-1}',
      /^hello: \/proto must be an integer from 1 to 255 .*, got -1$/,
    ],
    ['{"event":"hello","board":"v","proto":0}', /^hello: \/proto .*, got 0$/],
    ['{"event":"hello","board":"v","proto":256}', /^hello: \/proto .*, got 256$/],
    ['{"event":"hello","board":"v","proto":1e300}', /^hello: \/proto .*, got 1e\+300$/],
    ['{"event":"hello","board":"v","proto":1.5}', /^hello: \/proto .*, got 1\.5$/],
    ['{"event":"hello","board":"v","proto":null}', /^hello: \/proto .*, got null$/],
    [`{"event":"hello","board":"v","proto":"${'x'.repeat(100)}"}`, /^hello: \/proto .*, got "x{39}…$/],
    ['{"event":"hello","board":"v","fw":5}', /^hello: \/fw must be string$/],
    ['{"event":"boom"}', /^\/event unknown event "boom"/],
    ['{"id":"x","ok":true}', /^reply: \/id /],
    ['{"id":1.5,"ok":true}', /^reply: \/id /],
    ['{"id":1}', /^reply: \/ must have required properties ok$/],
    ['{"id":1,"ok":false}', /^reply: \/error must be a string/],
    ['{"other":1}', /no "event" or "id"/],
  ]
  for (const [line, re] of cases) {
    const d = decodeBoardLine(typeof line === 'string' ? Buffer.from(line) : line)
    t.equal(d.ok, false, String(line))
    if (!d.ok) {
      t.match(d.error, re, String(line))
      t.equal(d.code, 'BAD_INPUT', String(line))
    }
  }
  t.same(encodeCommand(-1, 'ping', {}).ok, false)
  t.same(encodeCommand(1, 'Ping', {}).ok, false)
  t.same(encodeCommand(2 ** 32, 'ping', {}).ok, false)
  t.equal(
    encodeReply(3, { ok: false, code: 'BAD_INPUT', error: 'x"y' }),
    '{"id":3,"ok":false,"error":"x\\"y"}\n',
  )
  t.throws(() => createLineFramer(0), /line cap must be a positive integer/)
})
