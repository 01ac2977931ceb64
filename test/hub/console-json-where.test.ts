// Where a typed payload stops being JSON (hub/console/views/json-where.ts), pure: it agrees with
// JSON.parse on what is JSON, and points at the first wrong character by line and column.
import t from 'tap'
import { jsonErrorAt } from '../../hub/console/views/json-where.ts'

t.test('line and column of the first wrong character', async (t) => {
  t.equal(jsonErrorAt('{"slot":"A1","amount":2}'), null)
  t.same(jsonErrorAt('{"slot": A1}'), { offset: 9, line: 1, column: 10 })
  t.same(jsonErrorAt('{\n  "a": 1,\n  "b": tru\n}'), { offset: 22, line: 3, column: 11 })
  t.same(jsonErrorAt('{"a":1,}'), { offset: 7, line: 1, column: 8 }, 'trailing comma')
  t.same(jsonErrorAt('[1, 2'), { offset: 5, line: 1, column: 6 }, 'cut short: at the end')
  t.same(jsonErrorAt('{} x'), { offset: 3, line: 1, column: 4 }, 'text after the value')
  t.same(jsonErrorAt("{'a':1}"), { offset: 1, line: 1, column: 2 }, 'single quotes')
  t.same(jsonErrorAt(''), { offset: 0, line: 1, column: 1 })
})

t.test('agrees with JSON.parse on valid and broken texts', async (t) => {
  const valid = [
    '0',
    '-0.5e+3',
    '"\\u00e9\\n"',
    'true',
    'null',
    ' [ ] ',
    '{"a":[1,{"b":null}],"c":"d\\"e"}',
    '[1e5, -2E-2, 3.25]',
  ]
  // Every one-character deletion and several replacements of each valid text: what JSON.parse
  // accepts, the scanner accepts, and what it refuses, the scanner places inside the text.
  let n = 0
  for (const v of valid) {
    const variants = [v]
    for (let i = 0; i < v.length; i++) {
      variants.push(v.slice(0, i) + v.slice(i + 1))
      for (const c of ['x', ',', '"', '}', '0', '\n']) variants.push(v.slice(0, i) + c + v.slice(i + 1))
    }
    for (const text of variants) {
      let parses = true
      try {
        JSON.parse(text)
      } catch {
        parses = false
      }
      const at = jsonErrorAt(text)
      if (parses !== (at === null)) t.fail(`disagrees on ${JSON.stringify(text)}`)
      if (at) t.ok(at.offset <= text.length, `${JSON.stringify(text)}: inside`)
      n++
    }
  }
  t.ok(n > 500, `${n} texts compared`)
})
