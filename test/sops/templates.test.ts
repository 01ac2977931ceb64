import t from 'tap'
import fc from 'fast-check'
import { parseTemplates, resolveArgs, scanTemplates } from '../../sops/templates.ts'

t.test('parseTemplates finds every reference in string values', async (t) => {
  const refs = parseTemplates({
    a: '{{steps.1.slot}}',
    b: ['x {{ calls.0 }} y {{steps.2.items.0.id}}'],
    c: 3,
    '{{steps.9}}': 'key ignored',
  })
  t.same(
    refs.map((r) => [r.kind, r.index, r.path]),
    [
      ['steps', 1, ['slot']],
      ['calls', 0, []],
      ['steps', 2, ['items', '0', 'id']],
    ],
  )
  t.same(scanTemplates({ a: '{{steps.x}} {{calls}} {{other.thing}}' }).malformed, [
    '{{steps.x}}',
    '{{calls}}',
  ])
})

t.test('a whole-string template keeps the JSON type; mixed text interpolates', async (t) => {
  const scope = { steps: { 1: { slot: 'A1', n: 2, ok: true, list: [1, 2] } }, calls: [{ id: 7 }] }
  const r = resolveArgs(
    {
      slot: '{{steps.1.slot}}',
      n: '{{steps.1.n}}',
      ok: '{{steps.1.ok}}',
      list: '{{steps.1.list}}',
      msg: 'slot {{steps.1.slot}} x{{steps.1.n}} {{steps.1.list}}',
      id: '{{calls.0.id}}',
      keep: [1, null, 'plain {{other}}'],
    },
    scope,
  )
  t.ok(r.ok)
  if (r.ok)
    t.same(r.value, {
      slot: 'A1',
      n: 2,
      ok: true,
      list: [1, 2],
      msg: 'slot A1 x2 [1,2]',
      id: 7,
      keep: [1, null, 'plain {{other}}'],
    })
})

t.test('unresolvable references are errors naming the reference', async (t) => {
  const scope = { steps: { 1: { a: 1 } }, calls: [] }
  const cases: Array<[string, RegExp]> = [
    ['{{steps.2.a}}', /\{\{steps\.2\.a\}\}: step 2 has no output/],
    ['x {{steps.1.b}}', /\{\{steps\.1\.b\}\}: no "b"/],
    ['{{calls.0}}', /call 0 has not run/],
    ['{{steps.1.a.deep}}', /no "a\.deep"/],
    ['{{steps.one}}', /malformed template/],
  ]
  for (const [s, re] of cases) {
    const r = resolveArgs({ v: s }, scope)
    t.equal(r.ok, false, s)
    if (!r.ok) t.match(r, { code: 'BAD_INPUT', error: re }, s)
  }
})

t.test('property: args without templates resolve to themselves', async (t) => {
  fc.assert(
    fc.property(fc.jsonValue(), (v) => {
      const json = JSON.parse(JSON.stringify(v))
      if (JSON.stringify(json).includes('{{')) return true
      const r = resolveArgs(json, { steps: {}, calls: [] })
      return r.ok && JSON.stringify(r.value) === JSON.stringify(json)
    }),
  )
  t.pass('identity held')
})

t.test('property: a whole-string template returns exactly the referenced value', async (t) => {
  fc.assert(
    fc.property(fc.jsonValue(), (v) => {
      const json = JSON.parse(JSON.stringify(v))
      const r = resolveArgs({ x: '{{steps.3}}' }, { steps: { 3: json }, calls: [] })
      return r.ok && JSON.stringify((r.value as { x: unknown }).x) === JSON.stringify(json)
    }),
  )
  t.pass('held')
})

t.test('a "__proto__" key stays a plain own property', async (t) => {
  const args = JSON.parse('{"__proto__":{"x":"{{steps.1}}"},"a":1}') as import('../../sops/types.ts').Json
  const r = resolveArgs(args, { steps: { 1: 'v' }, calls: [] })
  t.ok(r.ok)
  if (r.ok) {
    t.equal(JSON.stringify(r.value), '{"__proto__":{"x":"v"},"a":1}')
    t.equal(Object.getPrototypeOf(r.value), Object.prototype)
  }
})

t.test('{{trigger.path}} reads the trigger payload; missing payload or field is an error', async (t) => {
  t.same(
    parseTemplates({ a: '{{trigger.slot}}', b: 'x {{trigger}}' }).map((r) => [r.kind, r.path]),
    [
      ['trigger', ['slot']],
      ['trigger', []],
    ],
  )
  t.same(scanTemplates({ a: '{{trigger.}} {{triggers.x}}' }).malformed, ['{{trigger.}}'])
  const scope = { steps: {}, calls: [], trigger: { slot: 'A1', amount: 2 } }
  const r = resolveArgs(
    {
      slot: '{{trigger.slot}}',
      amount: '{{trigger.amount}}',
      all: '{{trigger}}',
      msg: 'slot {{trigger.slot}}',
    },
    scope,
  )
  t.ok(r.ok)
  if (r.ok) t.same(r.value, { slot: 'A1', amount: 2, all: { slot: 'A1', amount: 2 }, msg: 'slot A1' })
  const missing = resolveArgs({ v: '{{trigger.nope}}' }, scope)
  t.equal(missing.ok, false)
  if (!missing.ok) t.match(missing.error, /\{\{trigger\.nope\}\}: no "nope" in the trigger payload/)
  const none = resolveArgs({ v: '{{trigger.slot}}' }, { steps: {}, calls: [] })
  t.equal(none.ok, false)
  if (!none.ok) t.match(none.error, /has no trigger payload/)
})

t.test('an unclosed {{ is reported by the scan and refused when resolving', async (t) => {
  t.same(
    scanTemplates({ a: '{{steps.1.ms', b: ['x {{steps.1.ms} y'], c: '{{{raw}}} and {{ {{steps.1}} }}' })
      .unclosed,
    ['{{steps.1.ms', '{{steps.1.ms} y'],
  )
  for (const s of ['{{steps.1', 'a {{calls.0.x} b', '{{', 'ok {{steps.1}} then {{trigger']) {
    const r = resolveArgs({ v: s }, { steps: { 1: 'v' }, calls: ['c'], trigger: {} })
    t.equal(r.ok, false, s)
    if (!r.ok) t.match(r, { code: 'BAD_INPUT', error: /unclosed template/ }, s)
  }
  const fine = resolveArgs({ v: '{{{raw}}} {{name}} {{steps.1}}' }, { steps: { 1: 'v' }, calls: [] })
  t.same(fine, { ok: true, value: { v: '{{{raw}}} {{name}} v' } }, 'closed braces are left alone')
})
