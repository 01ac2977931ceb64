// Board firmware on the local API (bearer token, as every route): `POST /boards/:board/flash`
// writes an Intel HEX image through the board's bootloader (hub/flash/flasher.ts) and
// `GET /boards/:board/flash-history` lists the board's flashes.
// The flash answers at once with a status when it is refused (404 unknown board, 400 no flash
// profile or a bad image, 409 busy or a lower protocol without downgrade); once it starts, the
// answer is 200 and an NDJSON stream: one JSON line per progress event, the last one `done`.
// One request, one answer, as every other route: the CLI reads its progress from the answer it
// waits for anyway, and the hub keeps no job table to expire. A caller that goes away does not
// stop the flash (a board half written is worse than a flash nobody watches); its outcome is in
// the history.
import { PassThrough } from 'node:stream'
import type { FastifyInstance } from 'fastify'
import { type Flasher, type FlashEvent, HEX_TEXT_MAX } from '../flash/flasher.ts'
import { CodedError } from '../../errors/codes.ts'

const Board = {
  type: 'object',
  required: ['board'],
  properties: { board: { type: 'string', pattern: '^[A-Za-z0-9_.-]{1,64}$' } },
} as const
const FlashBody = {
  type: 'object',
  required: ['hex'],
  properties: {
    hex: { type: 'string', minLength: 1, maxLength: HEX_TEXT_MAX },
    downgrade: { type: 'boolean' },
    /** Who asks, for the log and the history (`alice`); every holder of the token may flash. */
    by: { type: 'string', minLength: 1, maxLength: 100 },
  },
  additionalProperties: false,
} as const
const HistoryQuery = {
  type: 'object',
  properties: { limit: { type: 'integer', minimum: 1, maximum: 500 } },
  additionalProperties: false,
} as const

/** JSON escapes each line break of the text: room for that beyond the text's own limit. */
const BODY_LIMIT = Math.ceil(HEX_TEXT_MAX * 1.1) + 4096

/** One NDJSON line of the stream. */
export function flashEventLine(e: FlashEvent): string {
  if (e.kind === 'phase')
    return `${JSON.stringify({ phase: e.phase, percent: e.percent, rollback: e.rollback })}\n`
  return `${JSON.stringify({ done: true, id: e.id, board: e.board, outcome: e.outcome, error: e.error, record: e.record })}\n`
}

/** `flasher` is null when hub.toml has no `[[boards]]`. */
export function boardFlashRoutes(flasher: Flasher | null, boards: readonly string[]) {
  return (app: FastifyInstance): void => {
    app.post(
      '/boards/:board/flash',
      { bodyLimit: BODY_LIMIT, schema: { params: Board, body: FlashBody } },
      async (req, reply) => {
        const { board } = req.params as { board: string }
        const b = req.body as { hex: string; downgrade?: boolean; by?: string }
        if (!flasher)
          throw new CodedError('NOT_FOUND', `unknown board "${board}" (hub.toml configures no boards)`)
        const out = new PassThrough()
        const begun = flasher.begin(
          {
            board,
            hex: b.hex,
            downgrade: b.downgrade ?? false,
            who: `${b.by ?? 'operator'} (local API)`,
            via: 'api',
          },
          (e) => {
            if (out.writable) out.write(flashEventLine(e))
            if (e.kind === 'done') out.end()
          },
        )
        if (!begun.ok) {
          out.destroy()
          return reply.code(begun.status).send({ error: begun.error, code: begun.code })
        }
        // The first line says what is being written, before the port is even released.
        out.write(
          `${JSON.stringify({ started: true, id: begun.id, board, sha256: begun.sha256, identity: begun.identity })}\n`,
        )
        return reply
          .code(200)
          .header('content-type', 'application/x-ndjson; charset=utf-8')
          .header('cache-control', 'no-store')
          .send(out)
      },
    )

    app.get(
      '/boards/:board/flash-history',
      { schema: { params: Board, querystring: HistoryQuery } },
      async (req) => {
        const { board } = req.params as { board: string }
        const { limit } = req.query as { limit?: number }
        if (!boards.includes(board) || !flasher)
          throw new CodedError(
            'NOT_FOUND',
            `unknown board "${board}" (configured: ${boards.join(', ') || 'none'})`,
          )
        return { board, flashes: await flasher.history(board, limit ?? 50) }
      },
    )
  }
}
