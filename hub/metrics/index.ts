// GET /metrics for the hub (hub/README.md, Metrics): the counts kept from the start (counts.ts),
// one snapshot of the hub's own sources per scrape (snapshot.ts), and prom-client, loaded at the
// first scrape (registry.ts). The route goes on the local API; `[metrics] port` adds a listener
// of its own for scrapers on other machines (listener.ts).
import type { FastifyInstance } from 'fastify'
import type { Log } from '../log.ts'
import { filesystemSpace, processIo, storeSizes } from './disk.ts'
import { oldestRunFinder } from './oldest-run.ts'
import type { MetricsRegistry } from './registry.ts'
import { registerMetricsRoute, type Scrape } from './route.ts'
import { type MetricSources, type SnapshotReaders, takeSnapshot } from './snapshot.ts'

import { startMetricsListener } from './listener.ts'

export { countEngine, type HubCounts } from './counts.ts'
export type { MetricSources } from './snapshot.ts'

export interface HubMetrics {
  /** The Prometheus text exposition of this moment. */
  scrape(): Promise<Scrape>
  /** Adds GET /metrics to the local API. */
  route(app: FastifyInstance): void
}

export function createHubMetrics(src: MetricSources): HubMetrics {
  const readers: SnapshotReaders = {
    storeSizes,
    filesystemSpace,
    processIo: () => processIo(),
    oldestRunAt: oldestRunFinder(src.engine),
  }
  let registry: Promise<MetricsRegistry> | null = null
  const load = async (): Promise<MetricsRegistry> => {
    const [{ createMetricsRegistry }, space, io] = await Promise.all([
      import('./registry.ts'),
      filesystemSpace(src.dataDir),
      processIo(),
    ])
    return createMetricsRegistry(() => takeSnapshot(src, readers), {
      broker: src.aedes !== null,
      mqtt: src.mqttBacklog() !== null,
      bridge: src.bridge !== null,
      attest: src.attestation !== null,
      attestSync: src.attestation !== null && src.attestation.sync() !== null,
      filesystem: space !== null,
      io: io !== null,
    })
  }
  const scrape = async (): Promise<Scrape> => {
    registry ??= load().catch((err: unknown) => {
      registry = null // tried again at the next scrape
      throw err
    })
    const r = await registry
    return { contentType: r.contentType, body: await r.metrics() }
  }
  return { scrape, route: (app) => registerMetricsRoute(app, scrape) }
}

export interface RunningMetrics extends HubMetrics {
  /** The listener's URL, or null without `[metrics] port`. */
  url: string | null
  close(): Promise<void>
}

/** The metrics, and their own listener when `[metrics]` sets a port. */
export async function startHubMetrics(
  src: MetricSources,
  config: { host: string; port: number | null; token: { file: string } | null },
  log: Log,
): Promise<RunningMetrics> {
  const metrics = createHubMetrics(src)
  if (config.port === null) return { ...metrics, url: null, close: async () => {} }
  const listener = await startMetricsListener({
    host: config.host,
    port: config.port,
    tokenFile: config.token?.file ?? null,
    scrape: metrics.scrape,
    log,
  })
  log.info({ url: listener.url, token: config.token !== null }, 'metrics listening')
  return { ...metrics, url: listener.url, close: () => listener.close() }
}
