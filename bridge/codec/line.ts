// One line ↔ one typed message. Pure: the bridge, the simulator and the tests share it.
import { Compile } from 'typebox/compile'
import { type Failure, fail } from '../../errors/codes.ts'
import {
  type BoardLine,
  Command,
  HelloEvent,
  type Json,
  MessageEvent,
  Reply,
  type Command as CommandT,
} from './messages.ts'
import { isProtocol, PROTO_MAX, PROTO_MIN } from './protocol.ts'

const checkHello = Compile(HelloEvent)
const checkMessage = Compile(MessageEvent)
const checkReply = Compile(Reply)
const checkCommand = Compile(Command)

/** A line that does not decode is what a board (or, encoding, a caller) sent: `BAD_INPUT`. */
export type Decoded<T> = { ok: true; value: T } | Failure<'BAD_INPUT'>

const decoder = new TextDecoder('utf-8', { fatal: true })

/** Shows at most 60 characters of a bad line in an error, escaped, so logs stay one line and small. */
export function preview(line: Uint8Array | string): string {
  const s = typeof line === 'string' ? line : Buffer.from(line).toString('latin1')
  const cut = s.length > 60 ? s.slice(0, 60) + '…' : s
  return JSON.stringify(cut)
}

function firstError(errors: Iterable<{ instancePath: string; message: string }>): string {
  for (const e of errors) return `${e.instancePath || '/'} ${e.message}`
  return 'invalid'
}

function parseObject(line: Uint8Array): Decoded<Record<string, unknown>> {
  let text: string
  try {
    text = decoder.decode(line)
  } catch {
    return fail('BAD_INPUT', 'not UTF-8')
  }
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return fail('BAD_INPUT', 'not JSON')
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return fail('BAD_INPUT', 'not a JSON object')
  return { ok: true, value: value as Record<string, unknown> }
}

/** Board → hub. Errors name the field that was wrong. */
export function decodeBoardLine(line: Uint8Array): Decoded<BoardLine> {
  const parsed = parseObject(line)
  if (!parsed.ok) return parsed
  const v = parsed.value
  if ('event' in v) {
    if (v.event === 'message') {
      if (checkMessage.Check(v)) return { ok: true, value: { kind: 'message', message: v } }
      return fail('BAD_INPUT', `message: ${firstError(checkMessage.Errors(v))}`)
    }
    if (v.event === 'hello') {
      // Named plainly: a board whose protocol field is unreadable is one the hub cannot place.
      if ('proto' in v && !isProtocol(v.proto)) {
        const got = JSON.stringify(v.proto)
        return fail(
          'BAD_INPUT',
          `hello: /proto must be an integer from ${PROTO_MIN} to ${PROTO_MAX} (the board's line protocol version), got ${got.length > 40 ? `${got.slice(0, 40)}…` : got}`,
        )
      }
      if (checkHello.Check(v)) return { ok: true, value: { kind: 'hello', hello: v } }
      return fail('BAD_INPUT', `hello: ${firstError(checkHello.Errors(v))}`)
    }
    return fail('BAD_INPUT', `/event unknown event ${preview(String(v.event))}`)
  }
  if ('id' in v) {
    if (checkReply.Check(v)) {
      if (v.ok === false && typeof v.error !== 'string')
        return fail('BAD_INPUT', 'reply: /error must be a string when ok is false')
      return { ok: true, value: { kind: 'reply', reply: v as BoardReply } }
    }
    return fail('BAD_INPUT', `reply: ${firstError(checkReply.Errors(v))}`)
  }
  return fail('BAD_INPUT', 'neither an event nor a reply (no "event" or "id")')
}
type BoardReply = Extract<BoardLine, { kind: 'reply' }>['reply']

/** Hub → board: the command line, newline included. */
export function encodeCommand(id: number, cmd: string, args: Json): Decoded<string> {
  const c = { id, cmd, args }
  if (!checkCommand.Check(c)) return fail('BAD_INPUT', `command: ${firstError(checkCommand.Errors(c))}`)
  return { ok: true, value: JSON.stringify(c) + '\n' }
}

/** Board side (simulator, tests): parses a command line. */
export function decodeCommand(line: Uint8Array): Decoded<CommandT> {
  const parsed = parseObject(line)
  if (!parsed.ok) return parsed
  const v = parsed.value
  if (!checkCommand.Check(v)) return fail('BAD_INPUT', `command: ${firstError(checkCommand.Errors(v))}`)
  return { ok: true, value: v as CommandT }
}

/** Board side: event and reply lines, newline included, in the firmware's field order. */
export function encodeHello(board: string, fw?: string, proto?: number): string {
  return (
    JSON.stringify({
      event: 'hello',
      board,
      ...(fw === undefined ? {} : { fw }),
      ...(proto === undefined ? {} : { proto }),
    }) + '\n'
  )
}
export function encodeMessage(signal: string, text: string): string {
  return JSON.stringify({ event: 'message', signal, text }) + '\n'
}
export function encodeReply(id: number, r: { ok: true; result: Json } | Failure): string {
  if (r.ok) return JSON.stringify({ id, ok: true, result: r.result }) + '\n'
  // The line protocol's reply has no code (bridge/README.md, "The board line protocol"): the
  // failure's code stays on this side of the line.
  const { ok, error } = r
  return JSON.stringify({ id, ok, error }) + '\n'
}
