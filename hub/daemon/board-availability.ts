// Where each board's `boards/<b>/availability` goes, so that it is `offline` whenever the hub is
// not there to say otherwise.
//
// MQTT gives a connection one will (MQTT 3.1.1 §3.1.2.5), and a hub owns several boards. So:
// - On an external broker, each board the hub owns gets a small session of its own whose will is
//   `boards/<b>/availability` = `offline` (retained, QoS 1), and that board's availability is
//   published on it. When the hub dies (SIGKILL, power, network), the broker publishes every
//   will: no board is left `online`. On every (re)connect the session publishes the board's
//   current state, since the broker may have fired the will meanwhile (a keepalive lost).
//   One TCP connection and one keepalive per board is the price; a hub has a few serial ports.
//   A hub-level will alone (Zigbee2MQTT's `bridge/state`) would leave each board's own topic
//   saying `online` for ever, and every consumer would have to combine two topics to know.
// - On the embedded broker, the broker dies with the hub: no will can be delivered to anyone,
//   and the retained store (LevelDB) keeps whatever it last held. So the main session resets
//   every owned board to `offline` at start, before any port opens, and carries their states;
//   a board still retained `online` from an older hub.toml is set `offline` too (availability
//   is the hub's alone, hub/DESIGN.md, "Security defaults", so nobody else can own it).
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt'
import { withNoDelay } from '../broker/no-delay.ts'
import { availabilityTopic } from '../../mqtt/topics.ts'
import { errorText } from '../../errors/text.ts'
import type { Log } from '../log.ts'

export type Availability = 'online' | 'offline'

export interface BoardAvailability {
  set(board: string, state: Availability): void
  /** Publishes `offline` for every board (clean stop) and ends the sessions it opened. */
  close(): Promise<void>
}

/** Embedded broker: the hub's main session, every owned board reset to `offline` first. */
export async function mainSessionAvailability(o: {
  client: MqttClient
  boards: readonly string[]
  log: Log
  /** Boards whose availability the broker holds retained as `online` (any board, configured or not). */
  retainedOnline?: () => Promise<string[]>
}): Promise<BoardAvailability> {
  const publish = (board: string, state: Availability): Promise<void> =>
    o.client
      .publishAsync(availabilityTopic(board), state, { qos: 1, retain: true })
      .then(() => undefined)
      .catch((err: unknown) =>
        o.log.warn({ board, state, err: errorText(err) }, 'availability not published'),
      )
  const stale = o.retainedOnline
    ? (await o.retainedOnline().catch(() => [])).filter((b) => !o.boards.includes(b))
    : []
  if (stale.length > 0) o.log.info({ boards: stale }, 'boards no longer in hub.toml set offline')
  await Promise.all([...o.boards, ...stale].map((b) => publish(b, 'offline')))
  return {
    set: (board, state) => void publish(board, state),
    async close() {
      // The bridge has published `offline` for every board it had online as it closed.
    },
  }
}

/**
 * External broker: one session per board, each with the will `offline`. `base` holds the
 * broker's address and credentials, the same as the hub's main session.
 */
export async function willSessionAvailability(o: {
  base: IClientOptions
  clientId: string
  boards: readonly string[]
  log: Log
}): Promise<BoardAvailability> {
  const sessions = new Map<string, { client: MqttClient; state: Availability }>()
  const publishCurrent = (board: string): void => {
    const s = sessions.get(board)
    // Not connected: mqtt.js would queue it, and the queue could replay an old state after a
    // newer one. The next `connect` publishes the state current then.
    if (!s?.client.connected) return
    s.client
      .publishAsync(availabilityTopic(board), s.state, { qos: 1, retain: true })
      .catch((err: unknown) =>
        o.log.warn({ board, state: s.state, err: errorText(err) }, 'availability not published'),
      )
  }
  try {
    for (const board of o.boards) {
      const client = withNoDelay(
        await mqtt.connectAsync({
          ...o.base,
          // A name per board, so one hub's sessions never take over each other's.
          clientId: `${o.clientId}-availability-${board}`,
          clean: true,
          reconnectPeriod: 1000,
          connectTimeout: 10_000,
          will: { topic: availabilityTopic(board), payload: Buffer.from('offline'), qos: 1, retain: true },
        }),
      )
      sessions.set(board, { client, state: 'offline' })
      client.on('error', (err) => o.log.warn({ board, err: err.message }, 'availability session error'))
      client.on('connect', () => publishCurrent(board))
      publishCurrent(board)
    }
  } catch (err) {
    await Promise.all([...sessions.values()].map((s) => s.client.endAsync(true)))
    throw new Error(`availability session to the broker failed: ${errorText(err)}`)
  }
  return {
    set(board, state) {
      const s = sessions.get(board)
      if (!s || s.state === state) return
      s.state = state
      publishCurrent(board)
    },
    async close() {
      await Promise.all(
        [...sessions.entries()].map(async ([board, s]) => {
          s.state = 'offline'
          if (s.client.connected) {
            await s.client
              .publishAsync(availabilityTopic(board), 'offline', { qos: 1, retain: true })
              .catch(() => undefined)
          }
          await s.client.endAsync()
        }),
      )
    },
  }
}

/** What `retainedOnline` reads on the embedded broker: Aedes' persistence, as far as used here. */
export interface RetainedStore {
  createRetainedStream(pattern: string): AsyncIterable<{ topic: string; payload: Buffer | string }>
}

/** The boards the embedded broker holds retained as `online`. */
export async function retainedOnlineBoards(store: RetainedStore): Promise<string[]> {
  const boards: string[] = []
  for await (const p of store.createRetainedStream(availabilityTopic('+'))) {
    if (String(p.payload) === 'online') boards.push(p.topic.split('/')[1] as string)
  }
  return boards
}
