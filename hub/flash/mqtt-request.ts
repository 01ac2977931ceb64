// A firmware flash asked for over MQTT: `svc/boards/<b>/flash` with
// `{"id"?, "hex", "downgrade"?, "reply_to"?}`, answered on `reply_to` (default
// `svc/boards/<b>/flash/reply`): `started`, progress, and the outcome (hub/README.md, "Board
// firmware"). Who may publish the request is the broker's decision (admin accounts on the embedded
// one, hub/broker/acl.ts). Pure: the payload in, the request or why not out; the lines to answer.
import { type RequestId, readRequestObject } from '../../bridge/request-payload.ts'
import { type Failure, fail } from '../../errors/codes.ts'
import { mayPublish } from '../broker/acl.ts'
import { topicError } from '../../mqtt/topics.ts'
import type { FlashEvent } from './flasher.ts'
import { HEX_TEXT_MAX } from './flasher.ts'

/** The payload's limit: the image's, plus what JSON escapes and the other fields take. */
export const FLASH_PAYLOAD_MAX = Math.ceil(HEX_TEXT_MAX * 1.1) + 4096

const FIELDS = new Set(['id', 'hex', 'downgrade', 'reply_to'])

export type { RequestId }

export interface FlashRequestPayload {
  id: RequestId
  hex: string
  downgrade: boolean
  replyTo: string
}

export function defaultReplyTopic(board: string): string {
  return `svc/boards/${board}/flash/reply`
}

/**
 * The request, or why not (with the id when it could be read, so the answer can carry it).
 * `hubOwned`: the boards on the hub's ports; `reply_to` must be a topic an admin may publish on
 * (never the hub's own svc/ or board topics: the hub would be answering in its own name there).
 */
export function parseFlashRequest(
  payload: Uint8Array,
  board: string,
  hubOwned: ReadonlySet<string>,
): { ok: true; value: FlashRequestPayload } | (Failure & { id: RequestId }) {
  const r = readRequestObject(payload, FLASH_PAYLOAD_MAX, '{"id"?, "hex", "downgrade"?, "reply_to"?}')
  if (!r.ok) return r
  const { o, id } = r
  const extra = Object.keys(o).find((k) => !FIELDS.has(k))
  if (extra !== undefined) return { ...fail('BAD_INPUT', `${extra.slice(0, 64)}: unknown field`), id }
  if (typeof o.hex !== 'string' || o.hex.length === 0)
    return { ...fail('BAD_INPUT', 'hex: must be the image as Intel HEX text'), id }
  if (o.downgrade !== undefined && typeof o.downgrade !== 'boolean')
    return { ...fail('BAD_INPUT', 'downgrade: must be true or false'), id }
  let replyTo = defaultReplyTopic(board)
  if (o.reply_to !== undefined) {
    if (typeof o.reply_to !== 'string') return { ...fail('BAD_INPUT', 'reply_to: must be a topic'), id }
    const bad = topicError(o.reply_to)
    if (bad) return { ...fail('BAD_INPUT', `reply_to: ${bad}`), id }
    const may = mayPublish(
      { kind: 'account', name: 'requester', role: 'admin', board: null },
      o.reply_to,
      hubOwned,
    )
    if (!may.ok)
      return {
        ...may,
        id,
        error: `reply_to: ${may.error.replace(/account "requester" \(role admin\)/, 'an admin')}`,
      }
    replyTo = o.reply_to
  }
  return { ok: true, value: { id, hex: o.hex, downgrade: o.downgrade === true, replyTo } }
}

/**
 * The answer lines of one request: each phase once and its progress every 10%, then the outcome.
 * Returns null for an event not worth a message.
 */
export function flashReplies(id: RequestId): (e: FlashEvent) => string | null {
  let last = ''
  return (e) => {
    if (e.kind === 'done')
      return JSON.stringify({
        id,
        board: e.board,
        done: true,
        outcome: e.outcome,
        error: e.error,
        record: e.record,
      })
    const key = `${e.rollback}:${e.phase}:${e.percent === null ? '' : Math.floor(e.percent / 10)}`
    if (key === last) return null
    last = key
    return JSON.stringify({ id, board: e.board, phase: e.phase, percent: e.percent, rollback: e.rollback })
  }
}
