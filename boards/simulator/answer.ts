// The simulator's answers to commands: the same replies, byte for byte, as the companion
// firmware's svc_commands.h (both are checked against boards/golden/replies.lines).
import type { Json } from '../../bridge/codec/index.ts'
import { type Failure, fail } from '../../errors/codes.ts'

/** The firmware's identity as its hello and capabilities give it (svc_identity.h). */
export const SIM_FW = 'svc-companion/0.2.0'
export const SIM_PROTO = 1
export const SIM_LINE_CAP = 256
const MAX_PIN = 69
/** Analog inputs A0..A15, as on the 70-pin board the firmware's host build models; they read 0. */
const MAX_ANALOG = 15
export const SIM_COMMANDS = ['ping', 'gpio_read', 'gpio_write', 'analog_read', 'capabilities'] as const

/** A refusal is the hub's command that the board cannot take (`BAD_INPUT`); its line carries only the text. */
export type Answer = { id: number; reply: { ok: true; result: Json } | Failure<'BAD_INPUT'> } | undefined

function intIn(v: unknown, lo: number, hi: number): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= lo && v <= hi
}

/** Answers one command line; undefined when it has no usable id (the firmware stays silent too). */
export function answerCommand(line: string, pins: Uint8Array): Answer {
  let v: unknown
  try {
    v = JSON.parse(line)
  } catch {
    return undefined
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return undefined
  const o = v as Record<string, unknown>
  if (!intIn(o.id, 0, 0xffffffff)) return undefined
  const id = o.id
  if (typeof o.cmd !== 'string') return { id, reply: fail('BAD_INPUT', 'cmd: missing or not a string') }
  const args =
    typeof o.args === 'object' && o.args !== null && !Array.isArray(o.args)
      ? (o.args as Record<string, unknown>)
      : {}
  switch (o.cmd) {
    case 'ping':
      return { id, reply: { ok: true, result: 'pong' } }
    case 'capabilities':
      return {
        id,
        reply: {
          ok: true,
          result: {
            fw: SIM_FW,
            commands: [...SIM_COMMANDS],
            line_cap: SIM_LINE_CAP,
            pins: MAX_PIN + 1,
            analog: MAX_ANALOG + 1,
          },
        },
      }
    case 'gpio_read':
    case 'gpio_write': {
      if (!intIn(args.pin, 0, MAX_PIN))
        return { id, reply: fail('BAD_INPUT', `args.pin: must be an integer from 0 to ${MAX_PIN}`) }
      const pin = args.pin
      if (o.cmd === 'gpio_write') {
        if (!intIn(args.value, 0, 1)) return { id, reply: fail('BAD_INPUT', 'args.value: must be 0 or 1') }
        pins[pin] = args.value
      }
      return { id, reply: { ok: true, result: { pin, value: pins[pin] ?? 0 } } }
    }
    case 'analog_read':
      if (!intIn(args.pin, 0, MAX_ANALOG))
        return {
          id,
          reply: fail('BAD_INPUT', `args.pin: must be an analog input from 0 to ${MAX_ANALOG}`),
        }
      return { id, reply: { ok: true, result: { pin: args.pin, value: 0 } } }
    default:
      return { id, reply: fail('BAD_INPUT', 'cmd: unknown command') }
  }
}
