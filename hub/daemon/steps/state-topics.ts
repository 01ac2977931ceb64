// svc/hub/state and friends (hub/mqtt-state/): started once the engine exists, before any port
// opens; the bridge's callbacks reach them through LateParts. Off on a broker that refused the
// hub's svc/ topics.
import type { MqttClient } from 'mqtt'
import type { HubEngine } from '../../../sops/hub-engine.ts'
import type { EmbeddedBroker } from '../../broker/broker.ts'
import type { DirectPublish } from '../../broker/direct-publish.ts'
import type { DiskGuard } from '../../disk/guard.ts'
import { type StateTopics, startStateTopics } from '../../mqtt-state/publisher.ts'
import { SVC_VERSION } from '../../version.ts'
import type { StartContext } from './context.ts'
import type { LoadedSops } from './sops.ts'

export async function startHubStateTopics(
  { config, log, closers }: StartContext,
  o: {
    client: MqttClient
    direct: DirectPublish | null
    broker: EmbeddedBroker | null
    svcTopicsRefused: boolean
    engine: HubEngine
    loaded: LoadedSops
    boardNames: string[]
    disk: DiskGuard
  },
): Promise<StateTopics | null> {
  const { client, direct, broker, engine, loaded, boardNames, disk } = o
  const topics = o.svcTopicsRefused
    ? null
    : await startStateTopics({
        client,
        ...(direct && broker ? { publish: direct, heard: broker.heard } : {}),
        engine,
        sops: () => loaded.sops,
        diagnostics: () => loaded.diagnostics,
        boards: boardNames,
        clientId: config.broker.clientId,
        version: SVC_VERSION,
        homeassistant: config.homeassistant,
        dataDir: config.dataDir,
        disk: () => disk.view(),
        log,
      })
  disk.onChange(() => topics?.changed())
  if (topics) closers.add('state topics', () => topics.close())
  return topics
}
