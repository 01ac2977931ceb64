// board_send: send one command to a board through the bridge and wait for its answer (the
// reply with the same id, bridge/README.md, "The board line protocol"). The bridge is injected as a port.
import type { XStatic } from 'typebox/schema'
import type { SendFailure } from '../bridge/types.ts'
import { type ErrorCode, fail } from '../errors/codes.ts'
import { errorText } from '../errors/text.ts'
import type { Json } from '../sops/types.ts'
import type { Tool, ToolResult } from './types.ts'

export const BoardSendArgs = {
  type: 'object',
  required: ['board', 'cmd'],
  properties: {
    board: { type: 'string', pattern: '^[A-Za-z0-9_.-]{1,64}$', description: 'board name from hub.toml' },
    cmd: {
      type: 'string',
      pattern: '^[a-z][a-z0-9_]{0,31}$',
      description: 'command name the board understands',
    },
    args: { description: 'command arguments (JSON)' },
    timeout_ms: { type: 'integer', minimum: 1, maximum: 600_000 },
  },
  additionalProperties: false,
} as const
export type BoardSendArgs = XStatic<typeof BoardSendArgs>

/** What the bridge answers: the board's reply (`ok`, `result`, `error`), and why it failed (`code`). */
export interface BoardAnswer {
  ok: boolean
  result?: Json
  error?: string
  code?: SendFailure
}

/** The bridge's reason for a failed command as a result's code (bridge/types.ts, SendFailure). */
const CODE_OF: Record<SendFailure, ErrorCode> = {
  unknown_board: 'NOT_FOUND',
  offline: 'UNREACHABLE',
  write: 'UNREACHABLE',
  closed: 'CANCELLED',
  updating: 'UNAVAILABLE',
  busy: 'RATE_LIMITED',
  bad_command: 'BAD_INPUT',
  board_error: 'UPSTREAM_FAILED',
  timeout: 'TIMEOUT',
}

export interface BoardPort {
  send(board: string, cmd: string, args: Json, opts: { timeoutMs: number }): Promise<BoardAnswer>
}

export function createBoardSend(boards: BoardPort, defaults: { timeoutMs: number }): Tool {
  return {
    name: 'board_send',
    description: "Send a command to a board and wait for its reply. Output: the reply's result.",
    schema: BoardSendArgs,
    async run(raw, ctx): Promise<ToolResult> {
      const args = raw as unknown as BoardSendArgs
      if (ctx.signal.aborted) return fail('CANCELLED', 'board_send: cancelled')
      try {
        const answer = await boards.send(args.board, args.cmd, (args.args ?? {}) as Json, {
          timeoutMs: args.timeout_ms ?? defaults.timeoutMs,
        })
        if (!answer.ok)
          return fail(
            answer.code ? CODE_OF[answer.code] : 'UPSTREAM_FAILED',
            `board ${args.board} answered ${args.cmd} with an error: ${answer.error ?? 'no reason given'}`,
          )
        return { ok: true, output: answer.result ?? null }
      } catch (err) {
        return fail('UNREACHABLE', `board_send ${args.board} ${args.cmd}: ${errorText(err)}`)
      }
    },
  }
}
