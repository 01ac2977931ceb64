// wait: pause a run for a while (debounce a machine, let a motor settle). Cancelling the run
// ends the wait at once.
import type { XStatic } from 'typebox/schema'
import { fail } from '../errors/codes.ts'
import type { Tool, ToolResult } from './types.ts'

export const MAX_WAIT_MS = 24 * 60 * 60 * 1000

export const WaitArgs = {
  type: 'object',
  properties: {
    ms: { type: 'integer', minimum: 0, maximum: MAX_WAIT_MS },
    seconds: { type: 'number', minimum: 0, maximum: MAX_WAIT_MS / 1000 },
  },
  additionalProperties: false,
} as const
export type WaitArgs = XStatic<typeof WaitArgs>

export function createWait(): Tool {
  return {
    name: 'wait',
    description: 'Wait for `ms` milliseconds or `seconds` seconds (exactly one). Output: { waited_ms }.',
    schema: WaitArgs,
    run(raw, ctx): Promise<ToolResult> {
      const args = raw as unknown as WaitArgs
      if ((args.ms === undefined) === (args.seconds === undefined)) {
        return Promise.resolve(fail('BAD_INPUT', 'wait: give exactly one of "ms" or "seconds"'))
      }
      const ms = args.ms ?? Math.round((args.seconds ?? 0) * 1000)
      if (ctx.signal.aborted) return Promise.resolve(fail('CANCELLED', 'wait: cancelled'))
      return new Promise((resolve) => {
        const timer = setTimeout(() => {
          ctx.signal.removeEventListener('abort', onAbort)
          resolve({ ok: true, output: { waited_ms: ms } })
        }, ms)
        const onAbort = (): void => {
          clearTimeout(timer)
          resolve(fail('CANCELLED', 'wait: cancelled'))
        }
        ctx.signal.addEventListener('abort', onAbort, { once: true })
      })
    },
  }
}
