// The boards on the local API: `GET /boards` (each board's state and counters, the bridge's
// publish queue) and `POST /boards/:board/send` (one command, the board's answer), for
// `svc board status` and `svc board send`. Errors are `{ error }` with a status that tells
// "no such board" (404) from "board not there" (409), "board said no" (422) and "no answer" (504).
import type { FastifyInstance } from 'fastify'
import type { BridgeStats, Json, SendFailure, SendResult } from '../../bridge/types.ts'
import { CodedError } from '../../errors/codes.ts'

export interface BoardsPort {
  send(board: string, cmd: string, args: Json, opts: { timeoutMs: number }): Promise<SendResult>
  stats(): BridgeStats
}

const Board = {
  type: 'object',
  required: ['board'],
  properties: { board: { type: 'string', pattern: '^[A-Za-z0-9_.-]{1,64}$' } },
} as const
const Send = {
  type: 'object',
  required: ['cmd'],
  properties: {
    cmd: { type: 'string', pattern: '^[a-z][a-z0-9_]{0,31}$' },
    args: {},
    timeout_ms: { type: 'integer', minimum: 1, maximum: 600_000 },
  },
  additionalProperties: false,
} as const

/** The HTTP status for each way a command fails (the console's send form answers the same). */
export const SEND_STATUS: Record<SendFailure, number> = {
  unknown_board: 404,
  offline: 409,
  closed: 409,
  updating: 409,
  busy: 429,
  bad_command: 400,
  board_error: 422,
  timeout: 504,
  write: 502,
}

/** `bridge` is null when hub.toml has no `[[boards]]`: the routes answer, with no board. */
export function boardRoutes(bridge: BoardsPort | null, defaultTimeoutMs: number) {
  return (app: FastifyInstance): void => {
    app.get('/boards', async () => bridge?.stats() ?? { boards: {}, queue: null })

    app.post('/boards/:board/send', { schema: { params: Board, body: Send } }, async (req, reply) => {
      const { board } = req.params as { board: string }
      const b = req.body as { cmd: string; args?: Json; timeout_ms?: number }
      if (!bridge)
        throw new CodedError('NOT_FOUND', `unknown board "${board}" (hub.toml configures no boards)`)
      const r = await bridge.send(board, b.cmd, b.args ?? {}, { timeoutMs: b.timeout_ms ?? defaultTimeoutMs })
      if (r.ok) return { board, cmd: b.cmd, ok: true, result: r.result }
      return reply
        .code(SEND_STATUS[r.code ?? 'board_error'])
        .send({ error: r.error, ...(r.code ? { code: r.code } : {}) })
    })
  }
}
