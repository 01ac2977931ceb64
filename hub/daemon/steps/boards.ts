// The boards: their availability (online/offline) on MQTT, the bridge to their serial ports, the
// flasher that writes their firmware, and, once the triggers listen, the bridge started with the
// sessions that take commands and flash requests for the boards.
import type { IClientOptions, MqttClient } from 'mqtt'
import type { PublishPort } from '../../../tools/mqtt_publish.ts'
import type { EmbeddedBroker } from '../../broker/broker.ts'
import type { RunningConsole } from '../../console/index.ts'
import type { Flasher } from '../../flash/flasher.ts'
import type { StateTopics } from '../../mqtt-state/publisher.ts'
import {
  type BoardAvailability,
  type RetainedStore,
  mainSessionAvailability,
  retainedOnlineBoards,
  willSessionAvailability,
} from '../board-availability.ts'
import { startBoardCommands } from '../board-commands.ts'
import { startFlashRequests } from '../board-flash-requests.ts'
import type { BridgeLike } from '../parts.ts'
import type { StartContext } from './context.ts'

/**
 * Parts started after the bridge that its callbacks reach (state topics, the console): set once
 * they exist, read when a board says something.
 */
export interface LateParts {
  stateTopics: StateTopics | null
  console: RunningConsole | null
}

/**
 * Every owned board reads `offline` until it answers, and again if the hub dies
 * (board-availability.ts: the main session on the embedded broker, a will per board elsewhere).
 */
export async function startBoardAvailability(
  { config, log, closers }: StartContext,
  o: { broker: EmbeddedBroker | null; client: MqttClient; sessionBase: IClientOptions; boardNames: string[] },
): Promise<BoardAvailability | null> {
  const { client, sessionBase, boardNames } = o
  if (boardNames.length === 0) return null
  const embedded = o.broker
  const availability = embedded
    ? await mainSessionAvailability({
        client,
        boards: boardNames,
        log,
        // Aedes keeps its persistence on the instance; its typings leave it out.
        retainedOnline: () =>
          retainedOnlineBoards((embedded.aedes as unknown as { persistence: RetainedStore }).persistence),
      })
    : await willSessionAvailability({
        base: sessionBase,
        clientId: config.broker.clientId,
        boards: boardNames,
        log,
      })
  const a = availability
  closers.add('board availability', () => a.close())
  return availability
}

/** The bridge, made but not started: it opens no port before the triggers listen. */
export async function createBridge(
  { config, log, parts }: StartContext,
  o: { availability: BoardAvailability | null; publish: PublishPort; late: LateParts },
): Promise<BridgeLike | null> {
  if (config.boards.length === 0) return null
  if (!parts.createBridge) throw new Error('boards are configured but this build has no bridge')
  const { publish, late } = o
  const a = o.availability
  return parts.createBridge({
    boards: config.boards,
    publish: (topic, payload, opts) => {
      late.stateTopics?.seen(topic, payload, opts)
      late.console?.seen(topic, payload, opts)
      return publish(topic, payload, opts)
    },
    log,
    ...(a
      ? {
          availability: (board: string, state: 'online' | 'offline') => {
            a.set(board, state)
            late.stateTopics?.board(board, state)
            late.console?.availability(board, state)
          },
        }
      : {}),
  })
}

/** `svc board flash` (hub/flash/): made with the bridge, before the console and the API offer it. */
export async function createFlasher(
  { config, log }: StartContext,
  bridge: BridgeLike | null,
  late: LateParts,
): Promise<Flasher | null> {
  if (!(bridge?.release && bridge.reclaim && bridge.onHello)) return null
  const { createHubFlasher } = await import('../../flash/hub-flasher.ts')
  return createHubFlasher({
    config,
    bridge: bridge as Parameters<typeof createHubFlasher>[0]['bridge'],
    log,
    onEvent: (e) => late.console?.flash?.(e),
  })
}

/** The bridge opens its ports, and the sessions for board commands and flash requests start. */
export async function startBoards(
  { config, log, closers }: StartContext,
  o: {
    bridge: BridgeLike | null
    flasher: Flasher | null
    broker: EmbeddedBroker | null
    publish: PublishPort
    sessionBase: IClientOptions
    boardNames: string[]
  },
): Promise<void> {
  const { bridge, broker, publish, sessionBase, boardNames } = o
  if (!bridge) return
  const b = bridge
  closers.add('bridge', () => b.close())
  // Closed before the bridge: a flash under way ends first (a half-written board is worse).
  const f = o.flasher
  if (f) closers.add('board flash', () => f.close())
  await bridge.start()
  const commands = await startBoardCommands({
    base: sessionBase,
    clientId: config.broker.clientId,
    boards: boardNames,
    bridge: b,
    defaultTimeoutMs: config.tools.boardTimeoutMs,
    log,
  })
  closers.add('board commands', () => commands.close())
  if (f) {
    const requests = await startFlashRequests({
      boards: boardNames,
      flasher: f,
      publish,
      log,
      embedded: broker ? { aedes: broker.aedes, principalOf: broker.principalOf } : null,
      base: sessionBase,
      clientId: config.broker.clientId,
    })
    closers.add('board flash requests', () => requests.close())
  }
}
