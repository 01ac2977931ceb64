// Every refusal carries a code (errors/README.md, "Results"): each `{ ok: false … }` the source
// writes, as a value or as a type, names a `code` beside its message, or is built from another
// failure (a spread, `Failure`). And a thrown value becomes text one way, `errorText`
// (errors/README.md, "Thrown errors"), not by hand in each catch.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { root, sourceFiles } from './source-files.ts'

/** The object literal or type that `ok: false` at `at` sits in: from its `{` to the matching `}`. */
function enclosing(src: string, at: number): string {
  let open = at
  for (let depth = 0; open > 0; open--) {
    const c = src[open]
    if (c === '}') depth++
    else if (c === '{') {
      if (depth === 0) break
      depth--
    }
  }
  let close = at
  for (let depth = 0; close < src.length; close++) {
    const c = src[close]
    if (c === '{') depth++
    else if (c === '}') {
      if (depth === 0) break
      depth--
    }
  }
  return src.slice(open, close + 1)
}

const lineOf = (src: string, at: number): number => src.slice(0, at).split('\n').length

// `code` as a key (`code: x`, `code?: x`) or shorthand (`{ ok: false, code, error }`), or a spread
// of a failure that has one.
const HAS_CODE = /[{,;\n]\s*code\s*[?:,;}]|\.\.\./

t.test('every { ok: false } carries a code', async (t) => {
  const missing: string[] = []
  for (const f of sourceFiles) {
    const src = readFileSync(join(root, f), 'utf8')
    for (const m of src.matchAll(/\bok:\s*false\b/g)) {
      const obj = enclosing(src, m.index)
      if (!HAS_CODE.test(obj))
        missing.push(`${f}:${lineOf(src, m.index)}: ${obj.replace(/\s+/g, ' ').slice(0, 90)}`)
    }
  }
  t.same(missing, [], `${missing.length} failures without a code:\n${missing.join('\n')}`)
})

// The hand-written ways a thrown value became text before errorText: each file that still has one.
const BY_HAND = [
  /\binstanceof Error\s*\?\s*[\w$.]+\.message\s*:\s*String\(/,
  /\(\s*[\w$.]+\s+as\s+Error\s*\)\.message\b/,
  // String() of an Error is "Error: …", a third spelling of the same text in log lines.
  /\berr: String\(/,
]

t.test('a thrown value becomes text only through errorText', async (t) => {
  const found: string[] = []
  for (const f of sourceFiles) {
    if (f === 'errors/text.ts') continue
    const lines = readFileSync(join(root, f), 'utf8').split('\n')
    lines.forEach((line, i) => {
      if (BY_HAND.some((re) => re.test(line))) found.push(`${f}:${i + 1}: ${line.trim()}`)
    })
  }
  t.same(found, [], `${found.length} places flatten an error by hand:\n${found.join('\n')}`)
})

t.test('the rules see what they look for', async (t) => {
  // A failure literal and type without a code are found, with one, spread or shorthand they are not.
  t.notOk(HAS_CODE.test("{ ok: false, error: 'x' }"))
  t.notOk(HAS_CODE.test('{ ok: false; error: string }'))
  t.notOk(HAS_CODE.test('{ ok: false, error: `decode ` + x }'))
  t.ok(HAS_CODE.test("{ ok: false, code: 'BAD_INPUT', error: 'x' }"))
  t.ok(HAS_CODE.test('{ ok: false; code: ErrorCode; error: string }'))
  t.ok(HAS_CODE.test('{ ok: false, code, error }'))
  t.ok(HAS_CODE.test('{ ...r, ok: false }'))
  const src = "const a = { x: { y: 1 }, ok: false, error: 'no' }\nconst b = 1"
  t.equal(enclosing(src, src.indexOf('ok:')), "{ x: { y: 1 }, ok: false, error: 'no' }")
  t.ok(BY_HAND[0]!.test('const m = err instanceof Error ? err.message : String(err)'))
  t.ok(BY_HAND[1]!.test('log.warn((e as Error).message)'))
  t.ok(BY_HAND[2]!.test("log.warn({ err: String(err) }, 'x')"))
  t.notOk(BY_HAND.some((re) => re.test('const m = errorText(err)')))
})
