// `svc hub`: one daemon composing the broker (embedded Aedes, or an external one by URL), one
// MQTT session, the bridge, the tools, the SOP engine, the trigger router and the local API.
// Start order follows the data (README.md, "The flow"): the broker first, the router
// subscribed before the bridge opens a port, so no board event is published to nobody. Close
// runs the other way round, each part closed even when an earlier one fails to.
import type { MqttClient } from 'mqtt'
import type { Logger } from 'pino'
import type { HubEngine } from '../../sops/hub-engine.ts'
import type { Diagnostic, Sop } from '../../sops/types.ts'
import type { ToolRegistry } from '../../tools/types.ts'
import type { EmbeddedBroker } from '../broker/broker.ts'
import type { RunningEngine } from '../engine/index.ts'
import type { Log } from '../log.ts'
import { countEngine } from '../metrics/index.ts'
import type { StateTopics } from '../mqtt-state/publisher.ts'
import type { HubService } from '../service/index.ts'
import type { TriggerRouter } from '../triggers/router.ts'
import type { HubConfig } from './config.ts'
import type { BridgeLike, HubParts } from './parts.ts'
import { startAttestation } from './steps/attestation.ts'
import {
  createBridge,
  createFlasher,
  type LateParts,
  startBoardAvailability,
  startBoards,
} from './steps/boards.ts'
import { startEmbeddedBroker } from './steps/broker.ts'
import { startConsole } from './steps/console.ts'
import { Closers, type StartContext } from './steps/context.ts'
import { buildTools, startEngine } from './steps/engine.ts'
import { startLocalApi } from './steps/local-api.ts'
import { startMemoryGiveBack } from './steps/memory.ts'
import { startMetrics } from './steps/metrics.ts'
import { connectSession } from './steps/session.ts'
import { invalidCount, type LoadedSops, loadAndReport } from './steps/sops.ts'
import { startHubStateTopics } from './steps/state-topics.ts'
import { checkStartStores, startDiskGuard } from './steps/stores.ts'
import { startTriggers } from './steps/triggers.ts'

export { logDiagnostics } from './steps/sops.ts'

export interface RunningHub {
  config: HubConfig
  sops: Sop[]
  diagnostics: Diagnostic[]
  /** The broker URL the hub's session uses (embedded or external). */
  brokerUrl: string
  broker: EmbeddedBroker | null
  mqtt: MqttClient
  tools: ToolRegistry
  engine: HubEngine
  router: TriggerRouter
  bridge: BridgeLike | null
  apiUrl: string | null
  webhookUrl: string | null
  /** The web console, when `[console] enabled` and this build has it. */
  console: { url: string; loginLink(): string } | null
  /** Reload SOPs from the sops dir (SIGHUP): engine and router swap them in. */
  reload(): Promise<void>
  close(): Promise<void>
}

/** Each step is in steps/, in the order it runs; a step adds what it started to the closers. */
export async function startHub(
  config: HubConfig,
  log: Logger | Log,
  parts: HubParts = {},
): Promise<RunningHub> {
  const startedAt = Date.now()
  const closers = new Closers(log)
  const ctx: StartContext = { config, log, parts, closers }
  // systemd's notify protocol and watchdog (hub/service/), when a service manager listens.
  const service = parts.service?.({ log }) ?? null
  service?.status('starting')
  try {
    await checkStartStores(ctx)
    const disk = await startDiskGuard(ctx)
    const loaded = await loadAndReport(config.sopsDir, log)
    const { broker, brokerUrl } = await startEmbeddedBroker(ctx, disk, loaded.sops)
    const { client, direct, publish, svcTopicsRefused, sessionBase } = await connectSession(
      ctx,
      broker,
      brokerUrl,
    )
    const boardNames = config.boards.map((b) => b.name)
    const availability = await startBoardAvailability(ctx, { broker, client, sessionBase, boardNames })
    const late: LateParts = { stateTopics: null, console: null }
    const bridge = await createBridge(ctx, { availability, publish, late })
    const flasher = await createFlasher(ctx, bridge, late)
    const attestation = await startAttestation(ctx, { publish, sops: loaded.sops, disk })
    const tools = buildTools(ctx, { publish, bridge, attestation: attestation.parts })
    const engine = await startEngine(ctx, { sops: loaded.sops, tools, disk })
    startMemoryGiveBack(ctx)
    // Counted from before the first trigger, for GET /metrics (hub/metrics/counts.ts).
    const counts = countEngine(engine)
    late.stateTopics = await startHubStateTopics(ctx, {
      client,
      direct,
      broker,
      svcTopicsRefused,
      engine,
      loaded,
      boardNames,
      disk,
    })
    late.console = await startConsole(ctx, {
      engine,
      loaded,
      boardNames,
      bridge,
      attestation: attestation.parts,
      disk,
      flasher,
    })
    const router = await startTriggers(ctx, { sops: loaded.sops, engine, disk, broker, client })
    await startBoards(ctx, { bridge, flasher, broker, publish, sessionBase, boardNames })
    const metrics = await startMetrics(ctx, {
      engine,
      counts,
      loaded,
      broker,
      client,
      router,
      bridge,
      attestation: attestation.parts,
    })
    const apiUrl = await startLocalApi(ctx, {
      startedAt,
      engine,
      loaded,
      router,
      bridge,
      flasher,
      boardNames,
      attestation,
      metrics,
      broker,
      brokerUrl,
      client,
      disk,
    })

    attestation.parts.start?.()
    log.info(
      {
        broker: brokerUrl,
        webhook: router.webhookUrl,
        api: apiUrl,
        console: late.console?.url ?? null,
        sops: loaded.sops.length,
        boards: config.boards.map((b) => b.name),
      },
      'hub started',
    )
    const hub = {
      config,
      brokerUrl,
      broker,
      mqtt: client,
      tools: tools.tools,
      engine,
      router,
      bridge,
      apiUrl,
    }
    return running(hub, { ctx, loaded, service, stateTopics: late.stateTopics, console: late.console })
  } catch (err) {
    await closers.closeAll()
    throw err
  }
}

/** The started hub: ready told to the service manager, SOPs reloaded on SIGHUP, closed in order. */
function running(
  hub: Omit<RunningHub, 'sops' | 'diagnostics' | 'webhookUrl' | 'console' | 'reload' | 'close'> & {
    engine: RunningEngine
  },
  o: {
    ctx: StartContext
    loaded: LoadedSops
    service: HubService | null
    stateTopics: StateTopics | null
    console: RunningHub['console']
  },
): RunningHub {
  const { config, engine, router, broker } = hub
  const { ctx, loaded, service, stateTopics } = o
  const { log, closers } = ctx
  const boardNames = config.boards.map((b) => b.name)
  const serving = () => ({
    sops: loaded.sops.length,
    invalid: invalidCount(loaded.diagnostics),
    boards: boardNames.length,
  })
  service?.ready(serving(), () => engine.heartbeat())
  let closing: Promise<void> | null = null
  return {
    ...hub,
    get sops() {
      return loaded.sops
    },
    get diagnostics() {
      return loaded.diagnostics
    },
    webhookUrl: router.webhookUrl,
    console: o.console,
    async reload() {
      service?.reloading()
      try {
        const next = await loadAndReport(config.sopsDir, log)
        loaded.sops = next.sops
        loaded.diagnostics = next.diagnostics
        engine.setSops(loaded.sops)
        await router.setSops(loaded.sops)
        stateTopics?.changed()
        await broker?.reloadAccounts()
      } finally {
        // A failed reload keeps the previous SOPs: the hub serves either way.
        service?.reloaded(serving())
      }
    },
    close() {
      closing ??= (async () => {
        service?.stopping()
        log.info('hub stopping')
        await closers.closeAll()
        log.info('hub stopped')
      })()
      return closing
    },
  }
}
