import t from 'tap'
import fc from 'fast-check'
import { cachedMatcher, evaluate, matches, parseCondition } from '../../sops/conditions.ts'

t.test('empty always matches, whatever the payload', async (t) => {
  for (const p of [undefined, '', 'x', '{"a":1}', 42, null, { a: 1 }]) t.equal(matches('', p), true)
  t.equal(matches('   ', 'x'), true)
})

t.test('$ form compares numbers read from JSON text or values', async (t) => {
  t.equal(matches('$.amount >= 1', '{"slot":"A1","amount":2}'), true)
  t.equal(matches('$.amount >= 1', '{"slot":"A1","amount":0.5}'), false)
  t.equal(matches('$.celsius > 30', { celsius: 31 }), true)
  t.equal(matches('$.celsius > 30', { celsius: 30 }), false)
  t.equal(matches('$.a.b.1 == 7', '{"a":{"b":[1,7]}}'), true)
  t.equal(matches('$.n != 3', '{"n":"3"}'), false, 'numeric string compares as a number')
  t.equal(matches('$.n < 10', '{"n":"9"}'), true)
  t.equal(matches('$.steps.1.ok == true', { steps: { '1': { ok: true } } }), true)
  t.equal(matches('$.decisions.3 == true', { decisions: { '3': false } }), false)
  t.equal(matches('$.s == "hello"', '{"s":"hello"}'), true)
  t.equal(matches("$.s == 'a>=b'", '{"s":"a>=b"}'), true, 'operator inside a quoted comparand')
  t.equal(matches('$.s == open', '{"s":"open"}'), true)
  t.equal(matches('$ > 2', '5'), true, '$ alone is the whole payload')
})

t.test('unevaluable never matches', async (t) => {
  t.equal(matches('$.amount >= 1', 'not json'), false)
  t.equal(matches('$.amount >= 1', '{"other":1}'), false)
  t.equal(matches('$.amount >= 1', undefined), false)
  t.equal(matches('$.amount >= 1', '{"amount":{"x":1}}'), false)
  t.equal(matches('$.a.0 == 1', '{"a":{"b":1}}'), false)
  t.equal(matches('> 0', 'abc'), false)
  t.equal(matches('> 0', { a: 1 }), false)
  t.equal(matches('> 0', undefined), false)
})

t.test('bare form reads the whole payload as a number', async (t) => {
  t.equal(matches('> 0', ' 3 '), true)
  t.equal(matches('> 0', '-3'), false)
  t.equal(matches('<= 2.5', 2.5), true)
  t.equal(matches('== 1e3', '1000'), true)
})

t.test('unparseable conditions are errors that say what is wrong, and never match', async (t) => {
  const cases: Array<[string, RegExp]> = [
    ['$.a', /no operator/],
    ['$.a >', /missing the value/],
    ['$a > 1', /\$\.field/],
    ['$.a..b > 1', /empty or spaced segment/],
    ['amount > 1', /must start with/],
    ['> abc', /needs a number/],
    ['>', /missing the number/],
    ['$.a >> 1', /malformed operator/],
    ['$.a =< 1', /malformed operator|no operator/],
  ]
  for (const [src, re] of cases) {
    const r = parseCondition(src)
    t.equal(r.ok, false, src)
    if (!r.ok) t.match(r, { code: 'BAD_INPUT', error: re }, src)
    t.equal(matches(src, '{"a":1}'), false)
  }
})

t.test('property: $ comparisons agree with JS number comparison', async (t) => {
  const ops = ['==', '!=', '>', '>=', '<', '<='] as const
  const js = {
    '==': (a: number, b: number) => a === b,
    '!=': (a: number, b: number) => a !== b,
    '>': (a: number, b: number) => a > b,
    '>=': (a: number, b: number) => a >= b,
    '<': (a: number, b: number) => a < b,
    '<=': (a: number, b: number) => a <= b,
  }
  fc.assert(
    fc.property(
      fc.integer({ min: -1e6, max: 1e6 }),
      fc.integer({ min: -1e6, max: 1e6 }),
      fc.constantFrom(...ops),
      (a, b, op) => {
        const got = matches(`$.x ${op} ${b}`, JSON.stringify({ x: a }))
        const bare = matches(`${op} ${b}`, String(a))
        return got === js[op](a, b) && bare === js[op](a, b)
      },
    ),
  )
  t.pass('agreed on all generated cases')
})

t.test('property: no input makes parse or evaluate throw', async (t) => {
  fc.assert(
    fc.property(
      fc.string(),
      fc.oneof(fc.string(), fc.jsonValue(), fc.constant(undefined)),
      (src, payload) => {
        const r = parseCondition(src)
        if (r.ok) evaluate(r.condition, payload)
        return typeof matches(src, payload) === 'boolean'
      },
    ),
  )
  t.pass('never threw')
})

t.test('property: a missing field never matches, whatever the operator', async (t) => {
  fc.assert(
    fc.property(
      fc.constantFrom('==', '!=', '>', '>=', '<', '<='),
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      (op, n) => {
        return matches(`$.missing ${op} ${n}`, '{"present":1}') === false
      },
    ),
  )
  t.pass('never matched')
})

t.test('property: cachedMatcher answers as matches does, asked again and past its cap', async (t) => {
  const cached = cachedMatcher(5)
  fc.assert(
    fc.property(
      fc.oneof(fc.string(), fc.constantFrom('$.v >= 10', '$.a == "x"', '> 3', '', '$.v >>= 1', '$.')),
      fc.oneof(fc.string(), fc.jsonValue(), fc.constantFrom('{"v":12}', '{"v":3}', '7', '{"a":"x"}')),
      (src, payload) =>
        cached(src, payload) === matches(src, payload) && cached(src, payload) === matches(src, payload),
    ),
  )
  t.pass('agreed on all generated cases')
})
