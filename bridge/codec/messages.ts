// The board line protocol's messages (bridge/README.md, "The board line protocol"), as typebox schemas.
// Board → hub: `hello` (the board names itself), `message` (an event for MQTT), and replies to
// commands. Hub → board: commands `{"id","cmd","args"}`.
import { Type, type Static } from 'typebox'
import { NAME_PATTERN } from './names.ts'
import { PROTO_MAX, PROTO_MIN } from './protocol.ts'

export { NAME_PATTERN, NAME_RE } from './names.ts'

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json }

export const HelloEvent = Type.Object(
  {
    event: Type.Literal('hello'),
    board: Type.String({ pattern: NAME_PATTERN }),
    fw: Type.Optional(Type.String({ maxLength: 64 })),
    /** The line protocol's version; absent means 1 (protocol.ts DEFAULT_PROTOCOL). */
    proto: Type.Optional(Type.Integer({ minimum: PROTO_MIN, maximum: PROTO_MAX })),
  },
  { additionalProperties: true },
)
export type HelloEvent = Static<typeof HelloEvent>

export const MessageEvent = Type.Object(
  {
    event: Type.Literal('message'),
    signal: Type.String({ pattern: NAME_PATTERN }),
    text: Type.String(),
  },
  { additionalProperties: true },
)
export type MessageEvent = Static<typeof MessageEvent>

/** Command ids are unsigned 32-bit integers: cheap for a microcontroller to parse and echo. */
export const CommandId = Type.Integer({ minimum: 0, maximum: 0xffffffff })

export const Reply = Type.Object(
  {
    id: CommandId,
    ok: Type.Boolean(),
    result: Type.Optional(Type.Unknown()),
    error: Type.Optional(Type.String()),
  },
  { additionalProperties: true },
)
export type Reply = { id: number; ok: boolean; result?: Json; error?: string }

export const CommandName = Type.String({ pattern: '^[a-z][a-z0-9_]{0,31}$' })

export const Command = Type.Object({
  id: CommandId,
  cmd: CommandName,
  args: Type.Unknown(),
})
export type Command = { id: number; cmd: string; args: Json }

export type BoardLine =
  | { kind: 'hello'; hello: HelloEvent }
  | { kind: 'message'; message: MessageEvent }
  | { kind: 'reply'; reply: Reply }
