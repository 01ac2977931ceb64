// GET /metrics (hub/metrics/): its own listener when `[metrics]` gives a port, and a route on the
// local API either way.
import type { MqttClient } from 'mqtt'
import type { HubEngine } from '../../../sops/hub-engine.ts'
import type { EmbeddedBroker } from '../../broker/broker.ts'
import { type HubCounts, type RunningMetrics, startHubMetrics } from '../../metrics/index.ts'
import type { TriggerRouter } from '../../triggers/router.ts'
import { SVC_VERSION } from '../../version.ts'
import type { AttestationParts, BridgeLike } from '../parts.ts'
import type { StartContext } from './context.ts'
import type { LoadedSops } from './sops.ts'

export async function startMetrics(
  { config, log, closers }: StartContext,
  o: {
    engine: HubEngine
    counts: HubCounts
    loaded: LoadedSops
    broker: EmbeddedBroker | null
    client: MqttClient
    router: TriggerRouter
    bridge: BridgeLike | null
    attestation: AttestationParts
  },
): Promise<RunningMetrics> {
  const { engine, counts, loaded, broker, client, router, bridge, attestation } = o
  const metrics = await startHubMetrics(
    {
      engine,
      counts,
      sops: () => loaded.sops,
      diagnostics: () => loaded.diagnostics,
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
  closers.add('metrics', () => metrics.close())
  return metrics
}
