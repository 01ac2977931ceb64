// The listing preview (market/listings/preview.ts): fields, types, counts, min/max, the time
// range and the action histogram of real canonical lines, the sample lines with their hashes,
// and the bounds that keep a hostile data file to a bounded summary. The `preview` field's rule.
import t from 'tap'
import {
  MAX_ACTION,
  MAX_DEPTH,
  MAX_FIELDS,
  MAX_NAME,
  MAX_SAMPLE,
  buildPreview,
  clip,
} from '../../market/listings/preview.ts'
import { canonicalLine, lineHash } from '../../records/index.ts'
import { MAX_PREVIEW_LINES, previewCount } from '../../records/preview-field.ts'

const rowsOf = (lines: string[]) =>
  lines.map((l, i) => ({
    paramsHash: lineHash(l),
    requestHash: `0x${String(i).padStart(64, '0')}` as `0x${string}`,
  }))

t.test('fields, types, counts, min/max, time range and the action histogram of attested lines', async (t) => {
  const lines = [
    {
      action: 'vend',
      at: '2026-01-05T08:00:00.000Z',
      params: { slot: 'A1', price: 150 },
      request_uri: 'svc://v/1',
    },
    {
      action: 'vend',
      at: '2026-01-05T09:30:00.000Z',
      params: { slot: 'A2', price: 175.5 },
      request_uri: 'svc://v/2',
    },
    { action: 'refill', at: '2026-01-04T23:00:00.000Z', params: { slot: null }, request_uri: 'svc://v/3' },
  ].map(canonicalLine)
  const p = buildPreview([...lines, 'not json', '[1,2]'], rowsOf(lines), 2)
  t.equal(p.lines, 5)
  t.equal(p.otherLines, 2, 'a line that is not a JSON object is counted, not described')
  const f = Object.fromEntries(p.fields.map((x) => [x.name, x]))
  t.same(Object.keys(f).sort(), ['action', 'at', 'params.price', 'params.slot', 'request_uri'])
  t.same(f['params.price'], { name: 'params.price', types: ['number'], count: 2, min: 150, max: 175.5 })
  t.same(f['params.slot']!.types, ['null', 'string'])
  t.equal(f['params.slot']!.count, 3)
  t.equal(f.action!.min, null, 'strings have no min/max')
  t.equal(p.timeField, 'at')
  t.equal(p.from, '2026-01-04T23:00:00.000Z')
  t.equal(p.to, '2026-01-05T09:30:00.000Z')
  t.same(p.actions, [
    { value: 'vend', count: 2 },
    { value: 'refill', count: 1 },
  ])
  t.equal(p.otherActions, 0)
  t.equal(p.samples.length, 2, 'the first N lines are the samples')
  t.same(p.samples[1], {
    index: 1,
    line: lines[1],
    truncated: false,
    bytes: Buffer.byteLength(lines[1]!),
    paramsHash: lineHash(lines[1]!),
    requestHash: `0x${'0'.repeat(63)}1`,
  })
  t.equal(buildPreview(lines, rowsOf(lines), 99).samples.length, 3, 'never more samples than lines')
  t.equal(buildPreview(lines, rowsOf(lines), 0).samples.length, 0)
})

t.test('hostile lines: markup, a 10 KB string, deep nesting, thousands of keys — all bounded', async (t) => {
  let deep: Record<string, unknown> = { leaf: 1 }
  for (let i = 0; i < 500; i++) deep = { d: deep }
  const many = Object.fromEntries(Array.from({ length: 3000 }, (_, i) => [`k${i}`, i]))
  const big = 'x'.repeat(10_000)
  const lines = [
    canonicalLine({ '<img src=x onerror=alert(1)>': '<script>alert(1)</script>', action: `<b>${big}` }),
    canonicalLine({ [big]: big, action: 'a'.repeat(10_000) }),
    canonicalLine({ deep }),
    canonicalLine(many),
    ...Array.from({ length: 40 }, (_, i) => canonicalLine({ action: `act${i}` })),
  ]
  const p = buildPreview(lines, rowsOf(lines), MAX_PREVIEW_LINES)
  t.ok(p.fields.length <= MAX_FIELDS, `at most ${MAX_FIELDS} fields kept (${p.fields.length})`)
  t.ok(p.moreFields > 0, 'the rest are counted')
  for (const f of p.fields) t.ok([...f.name].length <= MAX_NAME + 1, `name bounded: ${f.name.slice(0, 20)}`)
  t.ok(
    p.fields.some((f) => f.name === '<img src=x onerror=alert(1)>'),
    'a field name with markup is kept as text (the pages escape it)',
  )
  const deepest = Math.max(
    ...p.fields.filter((f) => f.name.startsWith('deep')).map((f) => f.name.split('.').length),
  )
  t.equal(deepest, MAX_DEPTH, 'nesting is followed to MAX_DEPTH, below that it is one "object" field')
  t.ok(p.fields.find((f) => f.name === 'deep.d.d')?.types.includes('object'))
  t.ok(p.actions.length <= 12, 'histogram buckets are bounded')
  t.ok(p.otherActions > 0, 'the rest of the actions are counted together')
  for (const a of p.actions) t.ok([...a.value].length <= MAX_ACTION + 1)
  for (const s of p.samples) t.ok([...s.line].length <= MAX_SAMPLE + 1, `sample ${s.index} bounded`)
  t.equal(p.samples[1]!.truncated, true, 'a long sample line says it was cut')
  t.ok(p.samples[1]!.bytes > 20_000, 'and how long it was')
  t.ok(JSON.stringify(p).length < 40_000, `the whole summary stays small (${JSON.stringify(p).length} chars)`)
})

t.test('clip never splits a surrogate pair', async (t) => {
  t.equal(clip('abc', 5), 'abc')
  t.equal(clip('😀😀😀', 2), '😀😀…')
  t.equal(clip('a😀b', 2), 'a😀…')
})

t.test('the preview field: absent or empty is 0; 0 to 5; anything else names the field', async (t) => {
  t.same(previewCount(undefined), { ok: true, value: 0 })
  t.same(previewCount(''), { ok: true, value: 0 })
  t.same(previewCount('3'), { ok: true, value: 3 })
  t.same(previewCount(String(MAX_PREVIEW_LINES)), { ok: true, value: MAX_PREVIEW_LINES })
  for (const bad of ['6', '-1', '2.5', 'three', '1e1'])
    t.match(
      previewCount(bad),
      { ok: false, code: 'BAD_INPUT', error: /^preview: must be a whole number of sample lines from 0 to 5/ },
      bad,
    )
})
