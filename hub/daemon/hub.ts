// `svc hub`: one daemon composing the broker (embedded Aedes, or an external one by URL), one
// MQTT session, the bridge, the tools, the SOP engine, the trigger router and the local API.
// Start order follows the data (README.md, "The flow"): the broker first, the router
// subscribed before the bridge opens a port, so no board event is published to nobody. Close
// runs the other way round, each part closed even when an earlier one fails to.
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import type { MqttClient } from 'mqtt'
import type { Logger } from 'pino'
import { loadSops } from '../../sops/load.ts'
import { cachedMatcher } from '../../sops/conditions.ts'
import type { Diagnostic, Sop } from '../../sops/types.ts'
import { createEngine } from '../engine/index.ts'
import { historyBounds } from '../engine/log/retention.ts'
import type { HubEngine } from '../../sops/hub-engine.ts'
import { type PublishPort, REPEAT_PROPERTY } from '../../tools/mqtt_publish.ts'
import { buildToolRegistry } from '../../tools/registry.ts'
import { createSopApproveTool } from '../../tools/sop_approve.ts'
import { createSopExecuteTool } from '../../tools/sop_execute.ts'
import { createSopStatusTool } from '../../tools/sop_status.ts'
import type { ToolRegistry } from '../../tools/types.ts'
import { startTriggerRouter, type TriggerRouter } from '../triggers/router.ts'
import { connectHeld } from '../triggers/session-gate.ts'
import { subscriptionFilters } from '../triggers/dispatch.ts'
import { buildPlan } from '../triggers/plan.ts'
import { quietClientLog } from '../broker/client-log.ts'
import { directPublish } from '../broker/direct-publish.ts'
import { amqpTarget } from '../triggers/amqp-url.ts'
import { startBroker, type EmbeddedBroker } from '../broker/broker.ts'
import { accountsPath } from '../broker/accounts-file.ts'
import type { HubConfig } from './config.ts'
import type { AttestationParts, BridgeLike, HubParts } from './parts.ts'
import type { Log } from '../log.ts'
import { mqttUrlOptions } from '../broker/mqtt-url.ts'
import { withNoDelay } from '../broker/no-delay.ts'
import { boardRoutes } from '../api/boards.ts'
import { hubStatus, registerStatusRoute } from '../api/status.ts'
import {
  type BoardAvailability,
  mainSessionAvailability,
  type RetainedStore,
  retainedOnlineBoards,
  willSessionAvailability,
} from './board-availability.ts'
import { startBoardCommands } from './board-commands.ts'
import { startFlashRequests } from './board-flash-requests.ts'
import { boardFlashRoutes } from '../api/board-flash.ts'
import type { Flasher } from '../flash/flasher.ts'
import { startStateTopics, type StateTopics } from '../mqtt-state/publisher.ts'
import { HUB_STATE_TOPIC, OFFLINE_STATE } from '../mqtt-state/payloads.ts'
import { SVC_VERSION } from '../version.ts'
import type { RunningConsole } from '../console/index.ts'
import { createDiskGuard } from '../disk/guard.ts'
import { checkStores } from '../stores/check.ts'
import { backupRoute } from '../backup/route.ts'
import { archiveStores } from '../backup/stores.ts'
import { countEngine, startHubMetrics } from '../metrics/index.ts'

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

export function logDiagnostics(log: Log, diagnostics: readonly Diagnostic[]): void {
  for (const d of diagnostics) {
    const where = { file: d.file, line: d.line }
    if (d.severity === 'error') log.error(where, `SOP not loaded: ${d.file}:${d.line}: ${d.message}`)
    else log.warn(where, `${d.file}:${d.line}: ${d.message}`)
  }
}

async function loadAndReport(dir: string, log: Log): Promise<{ sops: Sop[]; diagnostics: Diagnostic[] }> {
  await mkdir(dir, { recursive: true })
  const loaded = await loadSops(dir)
  logDiagnostics(log, loaded.diagnostics)
  log.info(
    {
      dir,
      loaded: loaded.sops.map((s) => s.name),
      errors: loaded.diagnostics.filter((d) => d.severity === 'error').length,
    },
    'SOPs loaded',
  )
  return loaded
}

export async function startHub(
  config: HubConfig,
  log: Logger | Log,
  parts: HubParts = {},
): Promise<RunningHub> {
  const startedAt = Date.now()
  const closers: { name: string; fn: () => Promise<unknown> }[] = []
  const closeAll = async (): Promise<void> => {
    for (const c of closers.splice(0).reverse()) {
      try {
        await c.fn()
      } catch (err) {
        log.error({ part: c.name, err: String(err) }, 'part did not close cleanly')
      }
    }
  }
  // systemd's notify protocol and watchdog (hub/service/), when a service manager listens.
  const service = parts.service?.({ log }) ?? null
  service?.status('starting')
  try {
    await mkdir(config.dataDir, { recursive: true })
    // Before any store opens (hub/stores/README.md, "Format versions and upgrades"): one that is
    // newer than this svc, or will not open, stops the start with one line; an older one is
    // copied beside itself and upgraded.
    await checkStores({
      dataDir: config.dataDir,
      stores: config.broker.url === null ? ['engine', 'broker'] : ['engine'],
      ifPresent: ['attest'],
      reserve: { mb: config.disk.reserveMb, percent: config.disk.reservePercent },
      log,
    })
    // Free space on the data folder and each store's (hub/disk/): below the reserve no new work
    // is taken, and a store whose write failed is reopened once there is room.
    const disk = createDiskGuard({
      dataDir: config.dataDir,
      reserve: { mb: config.disk.reserveMb, percent: config.disk.reservePercent },
      log,
    })
    await disk.start()
    closers.push({ name: 'disk guard', fn: async () => disk.stop() })
    let { sops, diagnostics } = await loadAndReport(config.sopsDir, log)

    let broker: EmbeddedBroker | null = null
    let brokerUrl = config.broker.url
    if (brokerUrl === null) {
      broker = await startBroker({
        host: config.broker.host,
        port: config.broker.port,
        wsPort: config.broker.wsPort,
        dbPath: join(config.dataDir, 'broker'),
        log,
        accountsFile: accountsPath(config.dataDir),
        hubBoards: config.boards.map((b) => b.name),
        hubClientId: config.broker.clientId,
        tls: config.broker.tls,
        triggerFilters: subscriptionFilters(buildPlan(sops)),
        onStoreError: (err) => disk.writeFailed('broker', err),
      })
      const b = broker
      closers.push({ name: 'broker', fn: () => b.close() })
      disk.addStore({ name: 'broker', path: join(config.dataDir, 'broker'), reopen: () => b.reopenStore() })
      // Clients' events wait before they are published while the disk refuses (trigger-feed.ts).
      b.triggers.hold(disk.refusing())
      disk.onChange((v) => b.triggers.hold(v.state === 'refusing'))
      disk.countHeld(() => (disk.refusing() ? b.triggers.waiting() : 0))
      brokerUrl = broker.url
    } else {
      log.info({ url: brokerUrl }, 'using external broker; no embedded broker started')
    }

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
      new Error(
        `cannot connect to the MQTT broker at ${url}: ${err instanceof Error ? err.message : String(err)}`,
      )
    let svcTopicsRefused = false
    const client = await connectHeld({ ...sessionOptions, will })
      .catch(async (err: unknown) => {
        // A broker whose ACL keeps svc/ for someone else (another svc hub's embedded broker)
        // refuses the will, and with it the whole session (MQTT-3.1.2-8 ff.); the hub runs
        // without the will rather than not at all, and says what that costs.
        if (broker || !/not authori[sz]ed/i.test(err instanceof Error ? err.message : String(err))) throw err
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
    closers.push({ name: 'mqtt', fn: () => client.endAsync() })
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
    // Every owned board reads `offline` until it answers, and again if the hub dies
    // (board-availability.ts: the main session on the embedded broker, a will per board elsewhere).
    const boardNames = config.boards.map((b) => b.name)
    let availability: BoardAvailability | null = null
    if (boardNames.length > 0) {
      const embedded = broker
      availability = embedded
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
      closers.push({ name: 'board availability', fn: () => a.close() })
    }

    // svc/hub/state and friends (hub/mqtt-state/): started once the engine exists, before any
    // port opens; the bridge's callbacks reach it through this reference.
    let stateTopics: StateTopics | null = null
    let consoleRef: RunningConsole | null = null
    let bridge: BridgeLike | null = null
    if (config.boards.length > 0) {
      if (!parts.createBridge) throw new Error('boards are configured but this build has no bridge')
      const a = availability
      bridge = await parts.createBridge({
        boards: config.boards,
        publish: (topic, payload, o) => {
          stateTopics?.seen(topic, payload, o)
          consoleRef?.seen(topic, payload, o)
          return publish(topic, payload, o)
        },
        log,
        ...(a
          ? {
              availability: (board: string, state: 'online' | 'offline') => {
                a.set(board, state)
                stateTopics?.board(board, state)
                consoleRef?.availability(board, state)
              },
            }
          : {}),
      })
    }
    // `svc board flash` (hub/flash/): made with the bridge, before the console and the API offer it.
    let flasher: Flasher | null = null
    if (bridge?.release && bridge.reclaim && bridge.onHello) {
      const { createHubFlasher } = await import('../flash/hub-flasher.ts')
      flasher = createHubFlasher({
        config,
        bridge: bridge as Parameters<typeof createHubFlasher>[0]['bridge'],
        log,
        onEvent: (e) => consoleRef?.flash?.(e),
      })
    }

    const attestation: AttestationParts = parts.attestation
      ? await parts.attestation({ publish, config, sops, log })
      : { tools: [] }
    if (attestation.close) closers.push({ name: 'attestation', fn: () => attestation.close!() })
    const attestStore = attestation.console?.store
    if (attestStore) {
      attestStore.onWriteError((err) => disk.writeFailed('attest', err))
      // attestStorePath(dataDir), not imported: the attestation part loads only when used.
      disk.addStore({
        name: 'attest',
        path: join(config.dataDir, 'attest'),
        reopen: () => attestStore.reopen(),
      })
    }
    // The sop_* tools reach the engine they are registered in, so they get it late, through a getter.
    let engineRef: HubEngine | undefined
    const getEngine = (): HubEngine | undefined => engineRef
    const sopTools = [
      createSopExecuteTool(getEngine),
      createSopStatusTool(getEngine),
      createSopApproveTool(getEngine),
    ]
    const registry = buildToolRegistry({
      publish,
      ...(bridge ? { boards: bridge } : {}),
      http: config.tools.httpRequest,
      httpTimeoutMs: config.tools.httpTimeoutMs,
      boardTimeoutMs: config.tools.boardTimeoutMs,
      extra: [...attestation.tools, ...sopTools],
    })
    if (!registry.ok) throw new Error(registry.error)

    const engine = await createEngine({
      sops,
      tools: registry.tools,
      dbPath: join(config.dataDir, 'engine'),
      history: historyBounds(config.history),
      commitWindowMs: config.history.commitWindowMs,
      log,
      disk,
      ...(parts.agent ? { agent: parts.agent } : {}),
    })
    engineRef = engine
    closers.push({ name: 'engine', fn: () => engine.close() })
    disk.addStore({
      name: 'engine',
      path: join(config.dataDir, 'engine'),
      reopen: () => engine.reopenStore(),
    })
    // Counted from before the first trigger, for GET /metrics (hub/metrics/counts.ts).
    const counts = countEngine(engine)

    const topics = svcTopicsRefused
      ? null
      : await startStateTopics({
          client,
          ...(direct && broker ? { publish: direct, heard: broker.heard } : {}),
          engine,
          sops: () => sops,
          diagnostics: () => diagnostics,
          boards: boardNames,
          clientId: config.broker.clientId,
          version: SVC_VERSION,
          homeassistant: config.homeassistant,
          dataDir: config.dataDir,
          disk: () => disk.view(),
          log,
        })
    stateTopics = topics
    disk.onChange(() => stateTopics?.changed())
    if (topics) closers.push({ name: 'state topics', fn: () => topics.close() })

    // The console before any trigger or port: it sees every run and every board change.
    if (parts.console && config.console.enabled) {
      const c = await parts.console({
        config: config.console,
        dataDir: config.dataDir,
        engine,
        sops: () => sops,
        diagnostics: () => diagnostics,
        sopsDir: config.sopsDir,
        boards: boardNames,
        bridge,
        boardTimeoutMs: config.tools.boardTimeoutMs,
        attestation: attestation.console ?? null,
        disk,
        flash: flasher
          ? {
              flasher,
              hasProfile: (board: string) => config.boards.some((b) => b.name === board && b.flash),
              helloTimeoutMs: config.flash.helloTimeoutMs,
            }
          : null,
        log,
      })
      consoleRef = c
      closers.push({ name: 'console', fn: () => c.close() })
    }

    // A URL or password that cannot be read stops the start with the field named; a broker that
    // does not answer does not (the amqp source retries it).
    let amqp: { url: string; shownUrl: string } | undefined
    if (config.amqp) {
      const target = await amqpTarget(config.amqp, process.env)
      if (!target.ok) throw new Error(target.error)
      amqp = { url: target.url, shownUrl: target.shown }
    }
    const router = await startTriggerRouter(sops, {
      engine,
      matches: cachedMatcher(),
      log,
      disk,
      ...(broker ? { feed: broker.triggers } : { mqtt: client }),
      cron: {
        timezone: config.cron.timezone,
        catchUp: config.cron.catchUp,
        statePath: join(config.dataDir, 'cron-state.json'),
      },
      ...(config.webhook.enabled
        ? {
            webhook: {
              host: config.webhook.host,
              port: config.webhook.port,
              bodyLimit: config.webhook.bodyLimit,
              rateLimit: config.webhook.rateLimit,
              secrets: config.webhook.secrets,
            },
          }
        : {}),
      filesystem: { debounceMs: config.filesystem.debounceMs },
      ...(config.amqp && amqp
        ? {
            amqp: {
              ...amqp,
              exchange: config.amqp.exchange,
              queue: config.amqp.queue,
              prefetch: config.amqp.prefetch,
              bindingsFile: join(config.dataDir, 'amqp-bindings.json'),
            },
          }
        : {}),
    })
    closers.push({ name: 'triggers', fn: () => router.stop() })

    if (bridge) {
      const b = bridge
      closers.push({ name: 'bridge', fn: () => b.close() })
      // Closed before the bridge: a flash under way ends first (a half-written board is worse).
      const f = flasher
      if (f) closers.push({ name: 'board flash', fn: () => f.close() })
      await bridge.start()
      const commands = await startBoardCommands({
        base: sessionBase,
        clientId: config.broker.clientId,
        boards: boardNames,
        bridge: b,
        defaultTimeoutMs: config.tools.boardTimeoutMs,
        log,
      })
      closers.push({ name: 'board commands', fn: () => commands.close() })
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
        closers.push({ name: 'board flash requests', fn: () => requests.close() })
      }
    }

    const metrics = await startHubMetrics(
      {
        engine,
        counts,
        sops: () => sops,
        diagnostics: () => diagnostics,
        version: SVC_VERSION,
        aedes: broker?.aedes ?? null,
        sessionConnected: () => client.connected,
        mqttBacklog: () => router.mqttBacklog(),
        bridge,
        attestation: attestation.console ?? null,
        dataDir: config.dataDir,
      },
      config.metrics,
      log,
    )
    closers.push({ name: 'metrics', fn: () => metrics.close() })

    let apiUrl: string | null = null
    if (parts.localApi) {
      const api = parts.localApi
      const token = await api.issueToken()
      const app = await api.create({ engine, token })
      router.registerRoutes(app)
      registerStatusRoute(app, () => {
        const boards = bridge?.stats().boards ?? {}
        return hubStatus({
          snapshot: {
            since: startedAt,
            now: Date.now(),
            clientId: config.broker.clientId,
            version: SVC_VERSION,
            sops: {
              loaded: sops.length,
              invalid: new Set(diagnostics.filter((d) => d.severity === 'error').map((d) => d.file)).size,
            },
            boards: Object.fromEntries(
              Object.entries(boards).map(([name, b]) => [name, b.state === 'online' ? 'online' : 'offline']),
            ),
            live: engine.liveRuns(),
            kept: engine.keptTriggers(),
            disk: disk.view(),
          },
          pid: process.pid,
          broker: { embedded: broker !== null, url: brokerUrl, connected: client.connected },
          backlog: router.mqttBacklog(),
          history: engine.history?.() ?? null,
        })
      })
      boardRoutes(bridge, config.tools.boardTimeoutMs)(app)
      boardFlashRoutes(flasher, boardNames)(app)
      attestation.routes?.(app)
      metrics.route(app)
      // Without a home (a test's parts) the archive keeps the data folder, the SOPs and the stores.
      backupRoute({
        places: {
          home: api.home ?? null,
          dataDir: config.dataDir,
          sopsDir: config.sopsDir,
          configFile: config.file,
        },
        stores: (history) =>
          archiveStores(
            {
              engine: (o) => engine.backupRecords(o),
              levels: [
                ...(broker ? [{ name: 'broker' as const, entries: () => broker!.storeEntries() }] : []),
                ...(attestStore ? [{ name: 'attest' as const, entries: () => attestStore.entries() }] : []),
              ],
            },
            history,
          ),
        log,
      })(app)
      closers.push({ name: 'local api', fn: () => app.close() })
      apiUrl = await app.listen({ host: '127.0.0.1', port: config.api.port })
      await api.writeInfo(apiUrl, { sopsDir: config.sopsDir, dataDir: config.dataDir })
      if (api.removeInfo) closers.push({ name: 'local api info', fn: () => api.removeInfo!() })
      log.info({ url: apiUrl }, 'local API listening')
    }

    attestation.start?.()
    log.info(
      {
        broker: brokerUrl,
        webhook: router.webhookUrl,
        api: apiUrl,
        console: consoleRef?.url ?? null,
        sops: sops.length,
        boards: config.boards.map((b) => b.name),
      },
      'hub started',
    )
    const serving = () => ({
      sops: sops.length,
      invalid: new Set(diagnostics.filter((d) => d.severity === 'error').map((d) => d.file)).size,
      boards: boardNames.length,
    })
    service?.ready(serving(), () => engine.heartbeat())
    let closing: Promise<void> | null = null
    return {
      config,
      get sops() {
        return sops
      },
      get diagnostics() {
        return diagnostics
      },
      brokerUrl,
      broker,
      mqtt: client,
      tools: registry.tools,
      engine,
      router,
      bridge,
      apiUrl,
      webhookUrl: router.webhookUrl,
      console: consoleRef,
      async reload() {
        service?.reloading()
        try {
          const next = await loadAndReport(config.sopsDir, log)
          sops = next.sops
          diagnostics = next.diagnostics
          engine.setSops(sops)
          await router.setSops(sops)
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
          await closeAll()
          log.info('hub stopped')
        })()
        return closing
      },
    }
  } catch (err) {
    await closeAll()
    throw err
  }
}
