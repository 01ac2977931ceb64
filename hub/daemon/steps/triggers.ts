// The trigger router: MQTT (fed in-process by the embedded broker, else through the session),
// cron, webhooks, the filesystem and AMQP, each handing its events to the engine.
import { join } from 'node:path'
import type { MqttClient } from 'mqtt'
import { cachedMatcher } from '../../../sops/conditions.ts'
import type { HubEngine } from '../../../sops/hub-engine.ts'
import type { Sop } from '../../../sops/types.ts'
import type { EmbeddedBroker } from '../../broker/broker.ts'
import type { DiskGuard } from '../../disk/guard.ts'
import { amqpTarget } from '../../triggers/amqp-url.ts'
import { type TriggerRouter, startTriggerRouter } from '../../triggers/router.ts'
import type { StartContext } from './context.ts'

export async function startTriggers(
  { config, log, closers }: StartContext,
  o: { sops: Sop[]; engine: HubEngine; disk: DiskGuard; broker: EmbeddedBroker | null; client: MqttClient },
): Promise<TriggerRouter> {
  const { sops, engine, disk, broker, client } = o
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
  closers.add('triggers', () => router.stop())
  return router
}
