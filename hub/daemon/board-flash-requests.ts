// `svc/boards/<b>/flash` → the flasher → answers on the request's reply topic
// (hub/flash/mqtt-request.ts has the payloads). On the embedded broker the hub takes the request
// inside Aedes, where it knows the account that sent it (the ACL lets only admins publish there);
// on an external broker through a clean session of its own (`<client_id>-flash`), where the broker's
// ACL decides who may publish and the sender's name is not known to the hub.
// A retained request is refused, as a retained board command is: it would flash again at every start.
import type { Aedes, Client, PublishPacket } from 'aedes'
import type { IClientOptions } from 'mqtt'
import { connectRequestSession } from './request-session.ts'
import type { PublishPort } from '../../tools/mqtt_publish.ts'
import type { Principal } from '../broker/acl.ts'
import type { Flasher } from '../flash/flasher.ts'
import { defaultReplyTopic, flashReplies, parseFlashRequest } from '../flash/mqtt-request.ts'
import { errorText } from '../../errors/text.ts'
import type { Log } from '../log.ts'

export interface FlashRequests {
  close(): Promise<void>
}

export function flashRequestTopic(board: string): string {
  return `svc/boards/${board}/flash`
}

export async function startFlashRequests(o: {
  boards: readonly string[]
  flasher: Flasher
  /** How the hub publishes (straight into the embedded broker, or its main session). */
  publish: PublishPort
  log: Log
  /** The embedded broker: requests are taken inside it, with the sender's account. */
  embedded: { aedes: Aedes; principalOf(client: Client): Principal | undefined } | null
  /** An external broker: the address and credentials of the hub's sessions, and its client id. */
  base?: IClientOptions
  clientId: string
}): Promise<FlashRequests> {
  const { log } = o
  const owned = new Set(o.boards)
  const topics = new Map(o.boards.map((b) => [flashRequestTopic(b), b]))
  if (topics.size === 0) return { close: async () => undefined }

  const answer = (topic: string, payload: string): void => {
    o.publish(topic, payload, { qos: 1, retain: false }).catch((err: unknown) =>
      log.warn({ topic, err: errorText(err) }, 'flash answer not published'),
    )
  }

  const handle = (board: string, payload: Uint8Array, retain: boolean, who: string): void => {
    if (retain) {
      log.warn({ board, who }, 'retained flash request ignored (clear it with an empty retained payload)')
      return
    }
    // An empty payload is how a retained message is cleared: nothing to run, nothing to answer.
    if (payload.length === 0) return
    const parsed = parseFlashRequest(payload, board, owned)
    if (!parsed.ok) {
      log.warn({ board, who, error: parsed.error }, 'bad flash request over MQTT refused')
      answer(
        defaultReplyTopic(board),
        JSON.stringify({ id: parsed.id, board, ok: false, error: parsed.error, code: 'bad_request' }),
      )
      return
    }
    const { id, hex, downgrade, replyTo } = parsed.value
    const line = flashReplies(id)
    const begun = o.flasher.begin({ board, hex, downgrade, who, via: 'mqtt' }, (e) => {
      const text = line(e)
      if (text !== null) answer(replyTo, text)
    })
    if (!begun.ok) {
      answer(replyTo, JSON.stringify({ id, board, ok: false, error: begun.error, code: begun.code }))
      return
    }
    answer(
      replyTo,
      JSON.stringify({ id, board, started: true, sha256: begun.sha256, identity: begun.identity }),
    )
  }

  if (o.embedded) {
    const { aedes, principalOf } = o.embedded
    const onPublish = (packet: PublishPacket, client: Client | null): void => {
      if (client === null) return
      const board = topics.get(packet.topic)
      if (board === undefined) return
      const p = principalOf(client)
      // The ACL let it through: an admin account (or the hub itself, which never asks).
      if (p?.kind !== 'account') return
      handle(board, packet.payload as Buffer, packet.retain, `${p.name} (mqtt)`)
    }
    aedes.on('publish', onPublish)
    return {
      close: async () => {
        aedes.off('publish', onPublish)
      },
    }
  }

  const client = await connectRequestSession(o.base ?? {}, `${o.clientId}-flash`, 'board flash', log)
  const onMessage = (topic: string, payload: Buffer, packet: { retain?: boolean }): void => {
    const board = topics.get(topic)
    if (board !== undefined) handle(board, payload, packet.retain === true, 'mqtt client (external broker)')
  }
  client.on('message', onMessage)
  try {
    await client.subscribeAsync([...topics.keys()], { qos: 1 })
  } catch (err) {
    await client.endAsync(true)
    throw new Error(`board flash session: ${errorText(err)}`)
  }
  return {
    async close() {
      client.off('message', onMessage)
      await client.endAsync()
    },
  }
}
