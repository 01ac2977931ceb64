// The condition language of triggers and step guards (sops/FORMAT.md, "Conditions").
// Pure: no I/O. Three forms:
//   ""                 always matches
//   "$.a.b <op> value" reads a field of the JSON payload and compares it
//   "<op> number"      the whole payload (trimmed) must be a number
// Anything that cannot be evaluated does not match; parse errors are values, never throws.

import { fail, type Result } from '../errors/codes.ts'

export const OPERATORS = ['>=', '<=', '!=', '==', '>', '<'] as const
export type Operator = (typeof OPERATORS)[number]

export type Condition =
  | { kind: 'always' }
  /** `path` is the list of segments after `$` (empty = the whole payload). */
  | { kind: 'path'; path: string[]; op: Operator; value: Comparand }
  | { kind: 'bare'; op: Operator; value: number }

/** The right-hand side: a number when it reads as one, else text (quotes stripped). */
export type Comparand = { kind: 'number'; value: number; text: string } | { kind: 'text'; value: string }

/** A condition that does not parse is its author's to fix: BAD_INPUT. */
export type ParseResult = Result<{ condition: Condition }>

/** A finite number written the way JSON or a human would write it (`3`, `-2.5`, `1e3`). */
function asNumber(text: string): number | undefined {
  const t = text.trim()
  if (t === '' || !/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(t)) return undefined
  const n = Number(t)
  return Number.isFinite(n) ? n : undefined
}

/** The operator at position i, longest first (`>=` before `>`). */
function operatorAt(src: string, i: number): Operator | undefined {
  for (const op of OPERATORS) if (src.startsWith(op, i)) return op
  return undefined
}

function comparand(raw: string): Result<{ value: Comparand }> {
  const text = raw.trim()
  if (text === '') return fail('BAD_INPUT', 'missing the value to compare with after the operator')
  if (/^[=<>!]/.test(text)) return fail('BAD_INPUT', `malformed operator before "${text}"`)
  const quoted = /^"(.*)"$/s.exec(text) ?? /^'(.*)'$/s.exec(text)
  if (quoted) return { ok: true, value: { kind: 'text', value: quoted[1] ?? '' } }
  const n = asNumber(text)
  if (n !== undefined) return { ok: true, value: { kind: 'number', value: n, text } }
  return { ok: true, value: { kind: 'text', value: text } }
}

export function parseCondition(src: string): ParseResult {
  const s = src.trim()
  if (s === '') return { ok: true, condition: { kind: 'always' } }

  if (s.startsWith('$')) {
    // The operator is the earliest one in the text (longest match there). The format says "the
    // first of >= <= != == > < found"; taking the earliest position agrees on every well-formed
    // condition and does not split inside a quoted comparand like `$.a == "x>=y"`.
    let at = -1
    let op: Operator | undefined
    for (let i = 1; i < s.length; i++) {
      op = operatorAt(s, i)
      if (op) {
        at = i
        break
      }
    }
    if (!op || at < 0)
      return fail('BAD_INPUT', `no operator in "${s}" (expected one of ${OPERATORS.join(' ')})`)
    const pathText = s.slice(1, at).trim()
    if (/[=!]$/.test(pathText))
      return fail(
        'BAD_INPUT',
        `malformed operator "${pathText.slice(-1)}${op}" (expected one of ${OPERATORS.join(' ')})`,
      )
    let path: string[] = []
    if (pathText !== '') {
      if (!pathText.startsWith('.'))
        return fail('BAD_INPUT', `path must be written $.field.field, got "$${pathText}"`)
      path = pathText.slice(1).split('.')
      const bad = path.findIndex((seg) => seg === '' || /\s/.test(seg))
      if (bad >= 0) return fail('BAD_INPUT', `empty or spaced segment in path "$${pathText}"`)
    }
    const rhs = comparand(s.slice(at + op.length))
    if (!rhs.ok) return rhs
    return { ok: true, condition: { kind: 'path', path, op, value: rhs.value } }
  }

  const op = operatorAt(s, 0)
  if (!op)
    return fail(
      'BAD_INPUT',
      `condition must start with "$" or an operator (${OPERATORS.join(' ')}), got "${s}"`,
    )
  const rest = s.slice(op.length).trim()
  if (rest === '') return fail('BAD_INPUT', 'missing the number to compare with after the operator')
  const n = asNumber(rest)
  if (n === undefined) return fail('BAD_INPUT', `bare comparison needs a number, got "${rest}"`)
  return { ok: true, condition: { kind: 'bare', op, value: n } }
}

function compare<T extends number | string>(a: T, op: Operator, b: T): boolean {
  switch (op) {
    case '==':
      return a === b
    case '!=':
      return a !== b
    case '>':
      return a > b
    case '>=':
      return a >= b
    case '<':
      return a < b
    case '<=':
      return a <= b
  }
}

/** Walk object keys and array indexes; undefined when any segment is missing. */
export function readPath(value: unknown, path: readonly string[]): unknown {
  let cur: unknown = value
  for (const seg of path) {
    if (Array.isArray(cur)) {
      if (!/^\d+$/.test(seg)) return undefined
      cur = cur[Number(seg)]
    } else if (cur !== null && typeof cur === 'object') {
      if (!Object.hasOwn(cur, seg)) return undefined
      cur = (cur as Record<string, unknown>)[seg]
    } else {
      return undefined
    }
    if (cur === undefined) return undefined
  }
  return cur
}

/** A scalar as the text it compares as; objects, arrays and missing values cannot be compared. */
function scalarText(v: unknown): string | undefined {
  if (typeof v === 'string') return v
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : undefined
  if (typeof v === 'boolean') return v ? 'true' : 'false'
  if (v === null) return 'null'
  return undefined
}

export function evaluate(condition: Condition, payload: unknown): boolean {
  try {
    switch (condition.kind) {
      case 'always':
        return true
      case 'bare': {
        let n: number | undefined
        if (typeof payload === 'string') n = asNumber(payload)
        else if (typeof payload === 'number' && Number.isFinite(payload)) n = payload
        return n !== undefined && compare(n, condition.op, condition.value)
      }
      case 'path': {
        if (payload === undefined) return false
        let doc: unknown = payload
        if (typeof payload === 'string') {
          try {
            doc = JSON.parse(payload)
          } catch {
            return false
          }
        }
        const left = readPath(doc, condition.path)
        const leftText = scalarText(left)
        if (leftText === undefined) return false
        const leftNum =
          typeof left === 'number' ? left : typeof left === 'string' ? asNumber(left) : undefined
        const rightNum =
          condition.value.kind === 'number' ? condition.value.value : asNumber(condition.value.value)
        if (leftNum !== undefined && rightNum !== undefined) return compare(leftNum, condition.op, rightNum)
        const rightText = condition.value.kind === 'number' ? condition.value.text : condition.value.value
        return compare(leftText, condition.op, rightText)
      }
    }
  } catch {
    // Nothing a payload holds may crash the caller (hub/DESIGN.md, "Errors and bad input").
    return false
  }
}

/** Parse and evaluate; an unparseable condition never matches. */
export function matches(src: string, payload: unknown): boolean {
  const parsed = parseCondition(src)
  return parsed.ok && evaluate(parsed.condition, payload)
}

/**
 * `matches` with each condition text parsed once: a trigger's condition is checked against every
 * message on its topic. Up to `max` texts are kept (conditions come from loaded SOPs, so few).
 */
export function cachedMatcher(max = 1000): (src: string, payload: unknown) => boolean {
  const parsed = new Map<string, Condition | null>()
  return (src, payload) => {
    let c = parsed.get(src)
    if (c === undefined) {
      const p = parseCondition(src)
      c = p.ok ? p.condition : null
      if (parsed.size < max) parsed.set(src, c)
    }
    return c !== null && evaluate(c, payload)
  }
}
