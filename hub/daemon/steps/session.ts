// The hub's MQTT session, the port its tools publish through, and the login its other sessions
// (board availability, board commands, flash requests) share.
import type { IClientOptions, MqttClient } from 'mqtt'
import { type PublishPort, REPEAT_PROPERTY } from '../../../tools/mqtt_publish.ts'
import type { EmbeddedBroker } from '../../broker/broker.ts'
import { quietClientLog } from '../../broker/client-log.ts'
import { type DirectPublish, directPublish } from '../../broker/direct-publish.ts'
import { mqttUrlOptions } from '../../broker/mqtt-url.ts'
import { withNoDelay } from '../../broker/no-delay.ts'
import { HUB_STATE_TOPIC, OFFLINE_STATE } from '../../mqtt-state/payloads.ts'
import { connectHeld } from '../../triggers/session-gate.ts'
import { codeOf, errorText } from '../../../errors/text.ts'
import type { StartContext } from './context.ts'

export interface HubSession {
  client: MqttClient
  /** Straight into the embedded broker (direct-publish.ts); null on an external one. */
  direct: DirectPublish | null
  /** What the tools and the bridge publish through. */
  publish: PublishPort
  /** The broker refused the will on svc/ topics: the state topics stay off. */
  svcTopicsRefused: boolean
  /** The login the hub's other sessions use. */
  sessionBase: IClientOptions
}

export async function connectSession(
  { config, log, closers }: StartContext,
  broker: EmbeddedBroker | null,
  brokerUrl: string,
): Promise<HubSession> {
  // On an external broker, clean: false keeps the session (and QoS 1 events) across
  // reconnects; mqtt.js re-subscribes by itself when a broker comes back without the session.
  // The embedded broker hands events to the triggers in-process (trigger-feed.ts): the session
  // is clean there, and what an older hub's session had queued goes to the triggers first
  // (leftovers.ts).
  // writeCache: false: otherwise mqtt-packet (shared with the embedded Aedes) builds a table of
  // 65,536 two-byte Buffers, one per packet id, on its first write: 6.3 MB of the hub's 31 MB
  // of live heap, to save a 2-byte allocation per packet. The bytes on the wire are the same.
  const url = brokerUrl
  const target = mqttUrlOptions(url)
  if (!target.ok) throw new Error(`broker.url: ${target.error}`)
  // connectHeld: events the broker kept for the session are held for the router (session-gate.ts).
  const sessionOptions = {
    ...target.value,
    clientId: config.broker.clientId,
    clean: broker !== null,
    reconnectPeriod: 1000,
    connectTimeout: 10_000,
    resubscribe: true,
    writeCache: false,
    // mqtt.js otherwise moves its keepalive timer on every packet it sends (a clearInterval and
    // a new setInterval: 1.5% of the hub's main thread over a peer burst); the ping then goes
    // every keepalive period whatever the traffic, one small packet a minute.
    reschedulePings: false,
    ...quietClientLog,
    ...(config.broker.username !== undefined ? { username: config.broker.username } : {}),
    ...(config.broker.password !== undefined ? { password: config.broker.password } : {}),
    // The embedded broker's own login for the hub: never refused, whatever the accounts say.
    ...(broker ? broker.hubLogin : {}),
  }
  // On an external broker, svc/hub/state says `offline` when the hub dies (MQTT 3.1.1 §3.1.2.5).
  const will = {
    topic: HUB_STATE_TOPIC,
    payload: Buffer.from(OFFLINE_STATE),
    qos: 1 as const,
    retain: true,
  }
  const connectErr = (err: unknown): Error =>
    new Error(`cannot connect to the MQTT broker at ${url}: ${errorText(err)}`)
  let svcTopicsRefused = false
  const client = await connectHeld({ ...sessionOptions, will })
    .catch(async (err: unknown) => {
      // A broker whose ACL keeps svc/ for someone else (another svc hub's embedded broker)
      // refuses the will, and with it the whole session (MQTT-3.1.2-8 ff.); the hub runs
      // without the will rather than not at all, and says what that costs.
      if (broker || !notAuthorized(err)) throw err
      // Publishing there would be refused too, and a refused publish closes the session
      // (MQTT-3.3.5-2): the state topics stay off on such a broker.
      svcTopicsRefused = true
      log.warn(
        { url, topic: HUB_STATE_TOPIC },
        'the broker refuses svc/ topics from this hub (its ACL keeps them for another hub?); connecting without the will, and svc/hub/state, svc/approvals/pending and svc/runs/… are not published',
      )
      return connectHeld(sessionOptions)
    })
    .then(withNoDelay)
    .catch((err: unknown) => {
      throw connectErr(err)
    })
  client.on('error', (err) => log.warn({ err: err.message }, 'mqtt session error'))
  client.on('offline', () => log.warn('mqtt session offline; reconnecting'))
  client.on('connect', (ack) => log.info({ sessionPresent: ack.sessionPresent }, 'mqtt session connected'))
  closers.add('mqtt', () => client.endAsync())
  // A possible repeat after a restart carries a user property where the session is MQTT 5.
  // On the embedded broker the hub's own messages go straight into it (direct-publish.ts); it
  // speaks MQTT 3.1.1, which has no user property to mark a repeat with.
  const direct = broker ? directPublish(broker.aedes, broker.heard) : null
  const publish: PublishPort =
    direct ??
    (async (topic, payload, o) => {
      await client.publishAsync(topic, payload, {
        qos: o.qos,
        retain: o.retain,
        ...(o.repeat && client.options.protocolVersion === 5
          ? { properties: { userProperties: { [REPEAT_PROPERTY]: '1' } } }
          : {}),
      })
    })

  // The hub's other sessions (board availability, board commands) log in as the main one does.
  const sessionBase = {
    ...target.value,
    ...quietClientLog,
    ...(config.broker.username !== undefined ? { username: config.broker.username } : {}),
    ...(config.broker.password !== undefined ? { password: config.broker.password } : {}),
    ...(broker ? broker.hubLogin : {}),
  }
  return { client, direct, publish, svcTopicsRefused, sessionBase }
}

/**
 * A CONNACK refusing the login: return code 5 in MQTT 3.1.1 (§3.2.2.3), reason code 0x87 in
 * MQTT 5 (§3.2.2.2). mqtt.js rejects the connect with that number as the error's `code`.
 */
function notAuthorized(err: unknown): boolean {
  const code = codeOf(err)
  return code === 5 || code === 0x87
}
