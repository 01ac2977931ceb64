// Commands to one board: `{"id","cmd","args"}` answered by `{"id","ok","result","error"}`
// (bridge/README.md, "The board line protocol"), one at a time per port, each with a timeout. A board
// with a 64-byte UART buffer cannot take a burst, and one-at-a-time makes "which reply is
// this" trivial for firmware that cannot queue. Timers are injected so tests can drive them.
import { errorText } from '../errors/text.ts'
import { encodeCommand, type Json, type Reply } from './codec/index.ts'
import type { SendFailure, SendResult } from './types.ts'

export interface CommandChannelOptions {
  board: string
  write(line: string): void
  defaultTimeoutMs: number
  /** Commands waiting behind the one in flight; past it, `send` fails at once. */
  maxWaiting: number
  setTimer(fn: () => void, ms: number): unknown
  clearTimer(handle: unknown): void
}

interface Pending {
  id: number
  cmd: string
  line: string
  timeoutMs: number
  resolve(r: SendResult): void
  timer?: unknown
}

export interface CommandChannel {
  send(cmd: string, args: Json, timeoutMs?: number): Promise<SendResult>
  /** A reply line arrived; false when no waiting command has its id. */
  reply(r: Reply): boolean
  /** The port went away (or was handed over): everything waiting fails with `reason` and `code`. */
  failAll(reason: string, code?: SendFailure): void
  busy(): boolean
  counts(): { commands: number; timeouts: number }
}

export function createCommandChannel(o: CommandChannelOptions): CommandChannel {
  let nextId = 1
  let current: Pending | undefined
  const waiting: Pending[] = []
  const counts = { commands: 0, timeouts: 0 }

  function finish(p: Pending, r: SendResult): void {
    if (p.timer !== undefined) o.clearTimer(p.timer)
    if (current === p) current = undefined
    p.resolve(r)
    next()
  }

  function next(): void {
    if (current || waiting.length === 0) return
    const p = waiting.shift()!
    current = p
    p.timer = o.setTimer(() => {
      counts.timeouts++
      finish(p, {
        ok: false,
        error: `board ${o.board} did not answer "${p.cmd}" (id ${p.id}) within ${p.timeoutMs} ms`,
        code: 'timeout',
      })
    }, p.timeoutMs)
    try {
      o.write(p.line)
    } catch (err) {
      finish(p, {
        ok: false,
        error: `board ${o.board}: write failed: ${errorText(err)}`,
        code: 'write',
      })
    }
  }

  return {
    send(cmd, args, timeoutMs = o.defaultTimeoutMs) {
      if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) {
        return Promise.resolve({
          ok: false,
          error: `timeoutMs: must be a positive number, got ${String(timeoutMs)}`,
          code: 'bad_command',
        })
      }
      if (waiting.length >= o.maxWaiting) {
        return Promise.resolve({
          ok: false,
          error: `board ${o.board}: ${o.maxWaiting} commands already waiting`,
          code: 'busy',
        })
      }
      const id = nextId
      const enc = encodeCommand(id, cmd, args)
      if (!enc.ok) return Promise.resolve({ ok: false, error: enc.error, code: 'bad_command' })
      nextId = nextId >= 0xffffffff ? 1 : nextId + 1
      counts.commands++
      return new Promise<SendResult>((resolve) => {
        waiting.push({ id, cmd, line: enc.value, timeoutMs, resolve })
        next()
      })
    },
    reply(r) {
      if (!current || current.id !== r.id) return false
      finish(
        current,
        r.ok
          ? { ok: true, result: r.result ?? null }
          : { ok: false, error: r.error ?? 'error', code: 'board_error' },
      )
      return true
    },
    failAll(reason, code = 'offline') {
      const all = current ? [current, ...waiting] : [...waiting]
      waiting.length = 0
      current = undefined
      for (const p of all) {
        if (p.timer !== undefined) o.clearTimer(p.timer)
        p.resolve({ ok: false, error: `board ${o.board}: ${reason}`, code })
      }
    },
    busy: () => current !== undefined || waiting.length > 0,
    counts: () => ({ ...counts }),
  }
}
