// The pure records module: canonical lines, hashing, the manifest and the row conditions.
import fc from 'fast-check'
import t from 'tap'
import { checkRecordFiles, splitLines } from '../../records/data-lines.ts'
import { canonicalLine, tryCanonicalLine } from '../../records/canonical.ts'
import { isHash, lineHash } from '../../records/hash.ts'
import { buildManifest, checkManifest, checkManifestAgainstData } from '../../records/manifest.ts'
import { requestHashFor } from '../../records/request-hash.ts'
import { checkValidationRow } from '../../records/verify-row.ts'

t.test('canonical line: RFC 8785', async (t) => {
  t.equal(
    canonicalLine({ b: 2, a: 1, c: { z: [3, { y: 1, x: 2 }] } }),
    '{"a":1,"b":2,"c":{"z":[3,{"x":2,"y":1}]}}',
  )
  t.equal(
    canonicalLine({ n: 1e21, m: 1e-7, k: 10.0, s: 'é\n"' }),
    '{"k":10,"m":1e-7,"n":1e+21,"s":"é\\n\\""}',
  )
  // keys sort by UTF-16 code units (RFC 8785 §3.2.3)
  t.equal(canonicalLine({ '\u20ac': 1, '\r': 2, '\ud83d\ude00': 3, '1': 4 }), '{"\\r":2,"1":4,"€":1,"😀":3}')
  for (const bad of [
    { x: Number.NaN },
    { x: Infinity },
    { x: undefined },
    { d: new Date(0) },
    { f: () => 1 },
    [1n],
  ]) {
    const r = tryCanonicalLine(bad)
    t.equal(r.ok, false, JSON.stringify(String(Object.values(bad)[0])))
  }
  t.same(tryCanonicalLine({ a: { b: [0, Number.NaN] } }), {
    ok: false,
    code: 'BAD_INPUT',
    error: '$.a.b[1]: NaN is not a JSON number',
  })
  t.throws(() => canonicalLine({ x: Number.NaN }), /cannot canonicalise/)
})

t.test('a canonical line never holds a newline and parses back to the same value', async (t) => {
  fc.assert(
    fc.property(fc.jsonValue(), (v) => {
      const line = canonicalLine(v)
      if (line.includes('\n')) return false
      return canonicalLine(JSON.parse(line)) === line
    }),
    { numRuns: 300 },
  )
  t.pass('300 random JSON values')
})

t.test('line hash: keccak256 of the UTF-8 bytes', async (t) => {
  t.equal(lineHash(''), '0xc5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470')
  t.equal(lineHash('abc'), '0x4e03657aea45a94fc7d47ba826c8d667c0d1e6e33a64a036ec44f58fa12d6c45')
  t.not(lineHash('é'), lineHash('e\u0301'), 'no Unicode normalisation: bytes are bytes')
  t.not(lineHash('{"a":1}'), lineHash('{"a":1}\n'), 'the newline is not part of the line')
  t.ok(isHash(lineHash('x')))
  t.notOk(isHash('0x12'))
})

t.test('record files: line n ↔ line n', async (t) => {
  t.same(splitLines(''), [])
  t.same(splitLines('a\nb\n'), ['a', 'b'])
  t.same(splitLines('a\nb'), ['a', 'b'])
  t.same(splitLines('a\r\n'), ['a\r'], 'a CR is part of the line')
  const h1 = lineHash('1')
  const h2 = lineHash('2')
  t.match(checkRecordFiles('a\nb\n', `${h1}\n${h2}\n`), { ok: true, hashes: [h1, h2] })
  // A count that differs names no line; a bad request-hash line is named in the text and in `line`.
  t.same(checkRecordFiles('a\nb\n', `${h1}\n`), {
    ok: false,
    code: 'BAD_INPUT',
    error: 'operations.jsonl has 2 lines but operation-requests.txt has 1',
  })
  t.same(checkRecordFiles('a\nb\n', `${h1}\n\n`), {
    ok: false,
    code: 'BAD_INPUT',
    error: 'operation-requests.txt line 2: blank (line not attested yet)',
    line: 2,
  })
  t.same(checkRecordFiles('a\nb\n', `${h1}\n${h1.toUpperCase().replace('0X', '0x')}\n`), {
    ok: false,
    code: 'BAD_INPUT',
    error: 'operation-requests.txt line 2: same request hash as line 1',
    line: 2,
  })
  t.same(checkRecordFiles('a\n', 'zz\n'), {
    ok: false,
    code: 'BAD_INPUT',
    error: 'operation-requests.txt line 1: not a 32-byte hex hash',
    line: 1,
  })
})

t.test('manifest: shape errors name the field; rows match the data', async (t) => {
  const lines = ['{"a":1}', '{"a":2}']
  const reqs = [lineHash('r1'), lineHash('r2')]
  const m = buildManifest('0', lines, reqs)
  t.same(checkManifest(JSON.parse(JSON.stringify(m))), { ok: true, value: m })
  t.same(checkManifestAgainstData(m, lines.join('\n') + '\n'), { ok: true, value: true })
  t.same(checkManifestAgainstData(m, '{"a":1}\n{"a":3}\n'), {
    ok: false,
    code: 'BAD_INPUT',
    error: 'rows[1].paramsHash: does not equal keccak256 of data line 2',
    fault: 'manifest',
  })
  t.same(checkManifestAgainstData(m, '{"a":1}\n'), {
    ok: false,
    code: 'BAD_INPUT',
    error: 'manifest has 2 rows but the data file has 1 lines',
    fault: 'data',
  })
  const bad: [unknown, string][] = [
    [null, 'manifest: expected a JSON object'],
    [{ ...m, version: 2 }, 'version: must be 1'],
    [{ ...m, chainId: 1 }, 'chainId: must be 10143'],
    [{ ...m, agentId: 0 }, 'agentId: must be a decimal string'],
    [{ ...m, rows: {} }, 'rows: must be an array'],
    [{ ...m, rows: Array(5001).fill(m.rows[0]) }, 'rows: at most 5000 items (got 5001)'],
    [{ ...m, rows: [m.rows[0], 'x'] }, 'rows[1]: expected an object'],
    [
      { ...m, rows: [{ ...m.rows[0], paramsHash: '0x1' }] },
      'rows[0].paramsHash: must be a 0x-prefixed 32-byte hex hash',
    ],
    [
      { ...m, rows: [{ paramsHash: m.rows[0]!.paramsHash }] },
      'rows[0].requestHash: must be a 0x-prefixed 32-byte hex hash',
    ],
  ]
  for (const [raw, error] of bad) t.same(checkManifest(raw), { ok: false, code: 'BAD_INPUT', error })
  t.throws(() => buildManifest('0', lines, [reqs[0]!]))
})

t.test('request hash: fixed by store, seq and line', async (t) => {
  const base = { chainId: 10143, storeId: lineHash('store'), seq: 7, paramsHash: lineHash('line') }
  const h = requestHashFor(base)
  t.equal(requestHashFor({ ...base }), h, 'deterministic')
  t.not(requestHashFor({ ...base, seq: 8 }), h, 'same line at another seq differs')
  t.not(requestHashFor({ ...base, storeId: lineHash('other') }), h)
  t.not(requestHashFor({ ...base, paramsHash: lineHash('line2') }), h)
  t.not(requestHashFor({ ...base, chainId: 1 }), h)
})

t.test('row conditions 1-5, in order', async (t) => {
  const attestor = '0x90F79bf6EB2c4f870365E785982E1f101E93b906'
  const paramsHash = lineHash('l')
  const row = {
    validator: attestor,
    agentId: 0n,
    response: 100,
    responseHash: paramsHash,
    tag: 'svc-action',
    lastUpdate: 1n,
  } as const
  const want = { agentId: '0', attestor: attestor.toLowerCase() as `0x${string}`, paramsHash }
  t.same(checkValidationRow(row, want), { ok: true })
  t.same(
    checkValidationRow({ ...row, tag: '' }, want),
    { ok: true },
    'empty tag allowed (verify route rule 5)',
  )
  t.match(checkValidationRow({ ...row, agentId: 1n }, want), { ok: false, condition: 1 })
  t.match(checkValidationRow({ ...row, validator: '0x0000000000000000000000000000000000000001' }, want), {
    ok: false,
    condition: 2,
  })
  t.match(checkValidationRow({ ...row, response: 0 }, want), { ok: false, condition: 3 })
  t.match(checkValidationRow({ ...row, responseHash: lineHash('m') }, want), { ok: false, condition: 4 })
  t.same(checkValidationRow({ ...row, tag: 'svc-actions' }, want), {
    ok: false,
    code: 'BAD_INPUT',
    condition: 5,
    error: 'tag: "svc-actions", expected "svc-action"',
  })
})
