// `boards/<b>/cmd` → `boards/<b>/reply` over MQTT (Zigbee2MQTT's `<device>/set` habit: a command
// topic per device, the answer on a topic beside it). The request is `{"id"?, "cmd", "args"?,
// "timeout_ms"?}`; the reply `{"id", "ok", "result"}` or `{"id", "ok": false, "error"}`, carrying
// the request's `id` (any string or number the sender chose, null when it gave none) so a sender
// can match answers to questions. Pure: the hub's MQTT wiring uses it.
import type { Json } from './codec/index.ts'
import { fail } from '../errors/codes.ts'
import { type RequestId, type RequestRefusal, readRequestObject } from './request-payload.ts'
import type { SendResult } from './types.ts'

/** The most a command request may weigh: a board's line is 1 KiB by default, so this is plenty. */
export const MAX_CMD_PAYLOAD = 16 * 1024

/** The line protocol's command names (codec/messages.ts `CommandName`). */
const CMD_RE = /^[a-z][a-z0-9_]{0,31}$/
const FIELDS = new Set(['id', 'cmd', 'args', 'timeout_ms'])

export type CmdId = RequestId

export interface CmdRequest {
  id: CmdId
  cmd: string
  args: Json
  timeoutMs?: number
}

/** A refusal's code is for this side; its MQTT reply says `bad_command` (bridge/README.md). */
export type ParsedCmd = { ok: true; value: CmdRequest } | RequestRefusal

export function parseCmdPayload(payload: Uint8Array): ParsedCmd {
  const r = readRequestObject(payload, MAX_CMD_PAYLOAD, '{"id"?, "cmd", "args"?, "timeout_ms"?}')
  if (!r.ok) return r
  const { o, id: cid } = r
  const extra = Object.keys(o).find((k) => !FIELDS.has(k))
  if (extra !== undefined)
    return { ...fail('BAD_INPUT', `${extra}: unknown field (allowed: id, cmd, args, timeout_ms)`), id: cid }
  if (typeof o.cmd !== 'string') return { ...fail('BAD_INPUT', 'cmd: missing or not a string'), id: cid }
  if (!CMD_RE.test(o.cmd))
    return { ...fail('BAD_INPUT', `cmd: "${o.cmd.slice(0, 40)}" must match [a-z][a-z0-9_]{0,31}`), id: cid }
  const t = o.timeout_ms
  if (t !== undefined && !(typeof t === 'number' && Number.isInteger(t) && t >= 1 && t <= 600_000))
    return { ...fail('BAD_INPUT', 'timeout_ms: must be an integer from 1 to 600000'), id: cid }
  return {
    ok: true,
    value: {
      id: cid,
      cmd: o.cmd,
      args: (o.args ?? {}) as Json,
      ...(t !== undefined ? { timeoutMs: t as number } : {}),
    },
  }
}

/** The reply payload for `boards/<b>/reply`. */
export function encodeCmdReply(id: CmdId, r: SendResult): string {
  return JSON.stringify(
    r.ok
      ? { id, ok: true, result: r.result }
      : { id, ok: false, error: r.error, ...(r.code ? { code: r.code } : {}) },
  )
}
