// The families of GET /metrics (families-*.ts) as prom-client metrics whose collect() fills them
// from one snapshot per scrape (snapshot.ts), plus prom-client's default process metrics
// (resident memory, heap, event-loop lag, GC). Loaded on the first scrape only (index.ts), so a
// hub nobody scrapes never loads prom-client. Labels are bounded by config: per SOP, per board,
// and the fixed sets of trigger kinds, outcomes and states; nothing per run, event or client.
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client'
import { boardFamilies } from './families-boards.ts'
import { hubFamilies } from './families-hub.ts'
import { storageFamilies } from './families-storage.ts'
import type { Family, MetricParts } from './family.ts'
import type { Snapshot } from './snapshot.ts'

export type { MetricParts } from './family.ts'

export interface MetricsRegistry {
  contentType: string
  /** The text of one scrape; scrapes that overlap run one after the other. */
  metrics(): Promise<string>
}

/** Every family this hub serves, in the order they are served. */
export function families(parts: MetricParts): Family[] {
  return [...hubFamilies(parts), ...(parts.bridge ? boardFamilies() : []), ...storageFamilies(parts)]
}

export function createMetricsRegistry(take: () => Promise<Snapshot>, parts: MetricParts): MetricsRegistry {
  const registry = new Registry()
  // The snapshot of the scrape under way; every collect() of that scrape awaits the same one.
  let current: Promise<Snapshot> = Promise.reject(new Error('no scrape under way'))
  current.catch(() => undefined)

  for (const f of families(parts)) {
    const config = { name: f.name, help: f.help, labelNames: [...f.labels], registers: [registry] }
    if (f.type === 'gauge')
      new Gauge({
        ...config,
        async collect() {
          const s = await current
          this.reset()
          f.fill(s, (labels, v) => this.set(labels, v))
        },
      })
    else
      new Counter({
        ...config,
        async collect() {
          const s = await current
          this.reset()
          f.fill(s, (labels, v) => this.inc(labels, v))
        },
      })
  }
  // The event-loop lag is sampled every 100 ms, not prom-client's 10: at 10 the sampling timer
  // alone kept an idle hub at 5-9 ms of CPU a second once scraped, against 1.0-1.3 at 100
  // (bench/README.md, "endurance: once-only marks flat"). Each sample is still exact, and a scrape
  // a minute sees 600 of them.
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 100 })

  let queue: Promise<unknown> = Promise.resolve()
  return {
    contentType: registry.contentType,
    metrics() {
      const run = queue.then(async () => {
        current = take()
        current.catch(() => undefined)
        return registry.metrics()
      })
      queue = run.catch(() => undefined)
      return run
    },
  }
}
