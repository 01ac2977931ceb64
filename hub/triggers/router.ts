// The trigger router: builds the plan from the loaded SOPs and runs one source per trigger
// kind (MQTT for peripheral + mqtt, cron, webhook gateway, filesystem, channel, manual, and amqp
// when `[amqp]` is configured, else inert with a warning). Every source reaches the engine through the same Firer. Sources only
// read the plan, so `setSops` swaps it in one place.
import type { FastifyInstance } from 'fastify'
import type { MqttClient } from 'mqtt'
import type { Engine } from '../../sops/engine-api.ts'
import type { Json, Sop } from '../../sops/types.ts'
import type { Log } from '../log.ts'
import {
  type AmqpSource,
  type AmqpSourceOptions,
  amqpProblems,
  amqpWarnings,
  createAmqpSource,
} from './amqp.ts'
import { type ChannelPostResult, postToChannel, registerChannelRoute } from './channel.ts'
import { type CronOptions, type CronSource, createCronSource } from './cron.ts'
import { type ConditionMatcher, type FireResult, createFirer } from './fire.ts'
import { type FilesystemOptions, type FilesystemSource, createFilesystemSource } from './filesystem.ts'
import { fireManual } from './manual.ts'
import type { DiskGate, MessageSource, MqttBacklog } from './intake.ts'
import { createMessageSource } from './mqtt.ts'
import { createFeedSource } from './feed.ts'
import type { TriggerFeed } from '../broker/trigger-feed.ts'
import { type TriggerPlan, buildPlan } from './plan.ts'
import { type WebhookGateway, type WebhookOptions, startWebhookGateway } from './webhook.ts'
import { errorText } from '../../errors/text.ts'

export interface RouterOptions {
  engine: Engine
  matches: ConditionMatcher
  log: Log
  /** A connected client; without one (or a feed), peripheral and mqtt triggers are inert (warned). */
  mqtt?: MqttClient
  /** The embedded broker's in-process feed (hub/broker/trigger-feed.ts), used instead of `mqtt`. */
  feed?: TriggerFeed
  cron: CronOptions
  /** Without it, no webhook gateway is started (webhook triggers warned as inert). */
  webhook?: WebhookOptions
  filesystem: FilesystemOptions
  /** Without it, amqp triggers are inert (warned once per SOP at start). */
  amqp?: Omit<AmqpSourceOptions, 'now'>
  /** MQTT trigger messages being admitted at once, beyond which reading pauses (default 10 000). */
  maxInFlight?: number
  /** The disk guard: while it refuses, MQTT sources read no more and keep what they took (hub/disk/). */
  disk?: DiskGate
  now?: () => number
}

export interface TriggerRouter {
  plan(): TriggerPlan
  setSops(sops: readonly Sop[]): Promise<void>
  /** Offer an MQTT message as if received (bench, tests). */
  handleMessage(topic: string, payload: Buffer | string): Promise<FireResult[]>
  /** Manual trigger (`sop_execute`, `svc sop run`): any loaded SOP may be started by hand. */
  manual(sop: string, payload: string | Json, source?: string): Promise<FireResult>
  channel(name: string, payload: string | Json): Promise<ChannelPostResult>
  /** The MQTT session's backlog: messages being admitted, pauses, busy stretches, repeats. */
  mqttBacklog(): MqttBacklog | null
  /** True while the amqp source is connected and consuming. */
  amqpConsuming(): boolean
  /** Adds `POST /channels/:name` and `GET /triggers/mqtt` (the backlog) to the local API. */
  registerRoutes(app: FastifyInstance): void
  webhookUrl: string | null
  stop(): Promise<void>
}

export async function startTriggerRouter(sops: readonly Sop[], opts: RouterOptions): Promise<TriggerRouter> {
  const { log } = opts
  const now = opts.now ?? Date.now
  const firer = createFirer(opts.engine, opts.matches, log)
  let plan = buildPlan(sops)

  const report = (p: TriggerPlan): void => {
    for (const d of [...p.problems, ...(opts.amqp ? amqpProblems(p) : amqpWarnings(p))]) {
      const line = `${d.file}:${d.line}: ${d.message}`
      if (d.severity === 'error') log.error({ file: d.file, line: d.line }, `trigger skipped: ${line}`)
      else log.warn({ file: d.file, line: d.line }, line)
    }
    if (!opts.mqtt && !opts.feed && (p.peripheral.length > 0 || p.mqtt.length > 0))
      log.warn('no MQTT connection: peripheral and mqtt triggers are inert')
    if (!opts.webhook && p.webhook.size > 0)
      log.warn({ paths: [...p.webhook.keys()] }, 'webhook gateway disabled: webhook triggers are inert')
  }
  report(plan)

  const sourceOpts = {
    ...(opts.maxInFlight !== undefined ? { maxInFlight: opts.maxInFlight } : {}),
    ...(opts.disk ? { disk: opts.disk } : {}),
    engine: opts.engine,
  }
  const messages: MessageSource | undefined = opts.feed
    ? createFeedSource(opts.feed, firer, log, plan, sourceOpts)
    : opts.mqtt
      ? createMessageSource(opts.mqtt, firer, log, plan, sourceOpts)
      : undefined
  const cron: CronSource = await createCronSource(firer, log, { ...opts.cron, now })
  const fs: FilesystemSource = createFilesystemSource(firer, log, { ...opts.filesystem, now })
  const stops: (() => Promise<void>)[] = []
  try {
    await messages?.setPlan(plan)
    await cron.setPlan(plan)
    await fs.setPlan(plan)
  } catch (err) {
    await Promise.allSettled([messages?.stop(), cron.stop(), fs.stop()])
    throw err
  }
  let webhook: WebhookGateway | undefined
  if (opts.webhook) {
    try {
      webhook = await startWebhookGateway(firer, log, { ...opts.webhook, now }, plan)
    } catch (err) {
      await Promise.allSettled([messages?.stop(), cron.stop(), fs.stop()])
      throw err
    }
  }
  // Started last: it connects in the background and retries, so it never fails the start.
  const amqp: AmqpSource | undefined = opts.amqp
    ? createAmqpSource(firer, log, plan, { ...opts.amqp, now })
    : undefined
  stops.push(
    async () => amqp?.stop(),
    async () => webhook?.stop(),
    async () => fs.stop(),
    async () => cron.stop(),
    async () => messages?.stop(),
  )

  return {
    plan: () => plan,
    async setSops(next) {
      plan = buildPlan(next)
      report(plan)
      webhook?.setPlan(plan)
      await messages?.setPlan(plan)
      await cron.setPlan(plan)
      await fs.setPlan(plan)
      await amqp?.setPlan(plan)
    },
    async handleMessage(topic, payload) {
      if (!messages) return []
      return messages.handle(topic, payload, now())
    },
    manual: (sop, payload, source = 'manual') => fireManual(plan, firer, sop, payload, source, now()),
    channel: (name, payload) => postToChannel(plan, firer, name, payload, now()),
    mqttBacklog: () => messages?.backlog() ?? null,
    amqpConsuming: () => amqp?.consuming() ?? false,
    registerRoutes: (app) => {
      registerChannelRoute(app, () => plan, firer, now)
      app.get('/triggers/mqtt', async () => ({ backlog: messages?.backlog() ?? null }))
    },
    webhookUrl: webhook?.url ?? null,
    async stop() {
      for (const stop of stops)
        await stop().catch((err: unknown) =>
          log.error({ err: errorText(err) }, 'trigger source did not stop cleanly'),
        )
    },
  }
}
