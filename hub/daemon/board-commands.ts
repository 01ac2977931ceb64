// `boards/<b>/cmd` → the board → `boards/<b>/reply` (bridge/cmd-payload.ts has the payloads). The
// broker decides who may publish a command (hub/broker/acl.ts on the embedded one); the hub runs
// what reaches it, one command at a time per port as every other command (bridge/commands.ts).
//
// Commands get a session of their own, with a clean start: the hub's main session is persistent
// (clean: false), and there the broker would keep every command sent while the hub was down and
// hand them all over at its return, to move hardware minutes late. A command is meant for now;
// its reply (or the lack of one) is the sender's acknowledgement. Retained commands are refused
// for the same reason: they would run again at every hub start. (A session of its own also keeps
// these subscriptions from overlapping the trigger router's `boards/+/+` on one client.)
import type { IClientOptions } from 'mqtt'
import { connectRequestSession } from './request-session.ts'
import { encodeCmdReply, parseCmdPayload } from '../../bridge/cmd-payload.ts'
import type { Json, SendResult } from '../../bridge/types.ts'
import { boardTopic } from '../../mqtt/topics.ts'
import { errorText } from '../../errors/text.ts'
import type { Log } from '../log.ts'

export interface BoardSender {
  send(board: string, cmd: string, args: Json, opts: { timeoutMs: number }): Promise<SendResult>
}

export interface BoardCommands {
  close(): Promise<void>
}

export async function startBoardCommands(o: {
  /** The broker's address and the hub's credentials, as for the main session. */
  base: IClientOptions
  clientId: string
  boards: readonly string[]
  bridge: BoardSender
  defaultTimeoutMs: number
  log: Log
}): Promise<BoardCommands> {
  const { log } = o
  const topics = new Map(o.boards.map((b) => [boardTopic(b, 'cmd'), b]))
  if (topics.size === 0) return { close: async () => undefined }
  const client = await connectRequestSession(o.base ?? {}, `${o.clientId}-commands`, 'board command', log)

  const reply = (board: string, payload: string): void => {
    client
      .publishAsync(boardTopic(board, 'reply'), payload, { qos: 1, retain: false })
      .catch((err: unknown) => log.warn({ board, err: errorText(err) }, 'board command reply not published'))
  }

  const onMessage = (topic: string, payload: Buffer, packet: { retain?: boolean }): void => {
    const board = topics.get(topic)
    if (board === undefined) return
    if (packet.retain) {
      log.warn(
        { board, topic },
        'retained board command ignored (commands are for now; clear it with an empty retained payload)',
      )
      return
    }
    // An empty payload is how a retained message is cleared: nothing to run, nothing to answer.
    if (payload.length === 0) return
    const parsed = parseCmdPayload(payload)
    if (!parsed.ok) {
      log.warn({ board, error: parsed.error }, 'bad board command over MQTT refused')
      reply(board, encodeCmdReply(parsed.id, { ok: false, error: parsed.error, code: 'bad_command' }))
      return
    }
    const { id, cmd, args, timeoutMs } = parsed.value
    o.bridge
      .send(board, cmd, args, { timeoutMs: timeoutMs ?? o.defaultTimeoutMs })
      // A send that throws is none of the bridge's wire codes (bridge/README.md, "Availability,
      // info, stats and commands": each names what a board or its port did): the reply says
      // what was thrown and carries no code, as it always has.
      .catch((err: unknown): SendResult => ({ ok: false, code: undefined, error: errorText(err) }))
      .then((r) => {
        log.info({ board, cmd, id, ok: r.ok, ...(r.ok ? {} : { error: r.error }) }, 'board command over MQTT')
        reply(board, encodeCmdReply(id, r))
      })
  }

  client.on('message', onMessage)
  try {
    await client.subscribeAsync([...topics.keys()], { qos: 1 })
  } catch (err) {
    await client.endAsync(true)
    throw new Error(`board command session: ${errorText(err)}`)
  }
  return {
    async close() {
      client.off('message', onMessage)
      await client.endAsync()
    },
  }
}
