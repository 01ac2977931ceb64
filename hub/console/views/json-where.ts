// Where JSON text first goes wrong, as line and column, for a payload typed into a form: V8's
// JSON.parse message names the token but not always its place ("Unexpected token 'A', "{"a": A}"
// is not valid JSON"), and in a textarea a person needs the line. A scanner of RFC 8259's
// grammar that stops at the first byte the grammar does not allow. Pure.

import { fail, type Result } from '../../../errors/codes.ts'
import { errorText } from '../../../errors/text.ts'
import type { Json } from '../../../sops/types.ts'

export interface JsonWhere {
  /** 0-based offset in the text. */
  offset: number
  line: number
  column: number
}

const WS = new Set([' ', '\t', '\n', '\r'])

/** The first place `text` stops being JSON (RFC 8259 §2), or null when it is JSON. */
export function jsonErrorAt(text: string): JsonWhere | null {
  let i = 0
  const ws = (): void => {
    while (i < text.length && WS.has(text[i]!)) i++
  }
  const fail = (): never => {
    throw i
  }
  const literal = (word: string): void => {
    for (const ch of word) {
      if (text[i] !== ch) fail()
      i++
    }
  }
  const string = (): void => {
    i++ // the opening quote
    for (;;) {
      const c = text[i]
      if (c === undefined || c < ' ') fail()
      if (c === '"') {
        i++
        return
      }
      if (c === '\\') {
        i++
        const e = text[i]
        if (e === 'u') {
          for (let k = 1; k <= 4; k++) if (!/[0-9a-fA-F]/.test(text[i + k] ?? '')) fail()
          i += 5
        } else if (e !== undefined && '"\\/bfnrt'.includes(e)) i++
        else fail()
      } else i++
    }
  }
  const digits = (): void => {
    if (!/[0-9]/.test(text[i] ?? '')) fail()
    while (/[0-9]/.test(text[i] ?? '')) i++
  }
  const number = (): void => {
    if (text[i] === '-') i++
    if (text[i] === '0') i++
    else digits()
    if (text[i] === '.') {
      i++
      digits()
    }
    if (text[i] === 'e' || text[i] === 'E') {
      i++
      if (text[i] === '+' || text[i] === '-') i++
      digits()
    }
  }
  const value = (depth: number): void => {
    // Deeper than any payload a person types; JSON.parse has its own limit, this keeps the stack.
    if (depth > 512) fail()
    ws()
    const c = text[i]
    if (c === '{') {
      i++
      ws()
      if (text[i] === '}') {
        i++
        return
      }
      for (;;) {
        ws()
        if (text[i] !== '"') fail()
        string()
        ws()
        if (text[i] !== ':') fail()
        i++
        value(depth + 1)
        ws()
        if (text[i] === ',') i++
        else if (text[i] === '}') {
          i++
          return
        } else fail()
      }
    }
    if (c === '[') {
      i++
      ws()
      if (text[i] === ']') {
        i++
        return
      }
      for (;;) {
        value(depth + 1)
        ws()
        if (text[i] === ',') i++
        else if (text[i] === ']') {
          i++
          return
        } else fail()
      }
    }
    if (c === '"') return string()
    if (c === 't') return literal('true')
    if (c === 'f') return literal('false')
    if (c === 'n') return literal('null')
    if (c === '-' || (c !== undefined && c >= '0' && c <= '9')) return number()
    fail()
  }
  try {
    value(0)
    ws()
    if (i < text.length) fail()
    return null
  } catch (at) {
    if (typeof at !== 'number') throw at
    const before = text.slice(0, at)
    const line = before.split('\n').length
    return { offset: at, line, column: at - (before.lastIndexOf('\n') + 1) + 1 }
  }
}

/**
 * A form box's text as JSON: empty is `{}`; too large or not JSON is an error naming the box and,
 * for bad JSON, the line and column. Pure.
 */
export function parseJsonBox(text: string, name: string, maxBytes: number): Result<{ value: Json }> {
  if (Buffer.byteLength(text, 'utf8') > maxBytes)
    return fail('TOO_LARGE', `${name} is larger than ${Math.floor(maxBytes / 1024)} KiB`)
  if (text.trim() === '') return { ok: true, value: {} }
  try {
    return { ok: true, value: JSON.parse(text) as Json }
  } catch (err) {
    const at = jsonErrorAt(text)
    const where = at ? ` at line ${at.line}, column ${at.column}` : ''
    return fail('BAD_INPUT', `${name} is not JSON${where}: ${errorText(err)}`)
  }
}
