// The local API the CLI talks to (when this build has it): the runs and approvals routes of the
// API part, and the hub's own (triggers, status, boards, flash, attestation, metrics, backup),
// all added before it listens. Its URL is written where the CLI finds it.
import type { MqttClient } from 'mqtt'
import type { EmbeddedBroker } from '../../broker/broker.ts'
import { boardFlashRoutes } from '../../api/board-flash.ts'
import { boardRoutes } from '../../api/boards.ts'
import { hubStatus, registerStatusRoute } from '../../api/status.ts'
import { backupRoute } from '../../backup/route.ts'
import { archiveStores } from '../../backup/stores.ts'
import type { DiskGuard } from '../../disk/guard.ts'
import type { RunningEngine } from '../../engine/index.ts'
import type { Flasher } from '../../flash/flasher.ts'
import type { RunningMetrics } from '../../metrics/index.ts'
import type { TriggerRouter } from '../../triggers/router.ts'
import { SVC_VERSION } from '../../version.ts'
import type { BridgeLike } from '../parts.ts'
import type { HubAttestation } from './attestation.ts'
import type { StartContext } from './context.ts'
import { type LoadedSops, invalidCount } from './sops.ts'

/** The URL the local API listens on; null when this build has none. */
export async function startLocalApi(
  { config, log, parts, closers }: StartContext,
  o: {
    startedAt: number
    engine: RunningEngine
    loaded: LoadedSops
    router: TriggerRouter
    bridge: BridgeLike | null
    flasher: Flasher | null
    boardNames: string[]
    attestation: HubAttestation
    metrics: RunningMetrics
    broker: EmbeddedBroker | null
    brokerUrl: string
    client: MqttClient
    disk: DiskGuard
  },
): Promise<string | null> {
  if (!parts.localApi) return null
  const { startedAt, engine, loaded, router, bridge, flasher, boardNames, metrics, broker, brokerUrl } = o
  const { client, disk } = o
  const attestStore = o.attestation.store
  const api = parts.localApi
  const token = await api.issueToken()
  const app = await api.create({ engine, token, log })
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
          loaded: loaded.sops.length,
          invalid: invalidCount(loaded.diagnostics),
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
  o.attestation.parts.routes?.(app)
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
          engine: (h) => engine.backupRecords(h),
          levels: [
            ...(broker ? [{ name: 'broker' as const, entries: () => broker!.storeEntries() }] : []),
            ...(attestStore ? [{ name: 'attest' as const, entries: () => attestStore.entries() }] : []),
          ],
        },
        history,
      ),
    log,
  })(app)
  closers.add('local api', () => app.close())
  const apiUrl = await app.listen({ host: '127.0.0.1', port: config.api.port })
  await api.writeInfo(apiUrl, { sopsDir: config.sopsDir, dataDir: config.dataDir })
  if (api.removeInfo) closers.add('local api info', () => api.removeInfo!())
  log.info({ url: apiUrl }, 'local API listening')
  return apiUrl
}
