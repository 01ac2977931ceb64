// AMQP triggers: one durable queue per hub on an AMQP 0-9-1 broker (RabbitMQ), bound to a topic
// exchange with each SOP's `routing_key`. A message is acknowledged only once every SOP it starts
// has its admission stored, with the delivery's once-only key in the same write (engine-api:
// `TriggerEvent.once`): a hub killed before the ack gets the message again, and the repeat is
// answered from the stored decision instead of starting a second run. The connection is retried
// with backoff for as long as the hub runs; the queue keeps what is published meanwhile.
// amqplib is loaded only when `[amqp]` is configured (a hub without it never pays for it).
import type { Channel, ChannelModel, ConsumeMessage } from 'amqplib'
import type { Diagnostic } from '../../sops/types.ts'
import { fail } from '../../errors/codes.ts'
import { errorText } from '../../errors/text.ts'
import { createReconnect } from '../../bridge/reconnect.ts'
import { writeFileAtomic } from '../../files/atomic-file.ts'
import { type Parsed, parseJson, readOrSetAside } from '../files/damaged-file.ts'
import type { Log } from '../log.ts'
import { deliveryKey } from './amqp-delivery.ts'
import { routingKeyError, routingKeyMatches } from './amqp-topic.ts'
import type { Firer, FireResult } from './fire.ts'
import { MAX_TRIGGER_PAYLOAD } from './intake.ts'
import type { TriggerPlan } from './plan.ts'

/** Without `[amqp]` in hub.toml, each SOP with an amqp trigger is named once at start, with its line. */
export function amqpWarnings(plan: TriggerPlan): Diagnostic[] {
  return plan.amqp.map((a) => ({
    file: a.trigger.origin.file,
    line: a.trigger.origin.line,
    severity: 'warning' as const,
    message: `amqp trigger (routing_key "${a.trigger.routing_key}") of SOP "${a.sop}" is inert: no [amqp] section in hub.toml; the SOP's other triggers still work`,
  }))
}

/** Routing keys that cannot be bound (too long for AMQP), as errors with the SOP's file and line. */
export function amqpProblems(plan: TriggerPlan): Diagnostic[] {
  const out: Diagnostic[] = []
  for (const a of plan.amqp) {
    const err = routingKeyError(a.trigger.routing_key)
    if (err)
      out.push({
        file: a.trigger.origin.file,
        line: a.trigger.origin.line,
        severity: 'error',
        message: `amqp trigger: ${err}`,
      })
  }
  return out
}

/** The SOPs one message starts: each SOP once, whichever of its amqp triggers match. Pure. */
export function dispatchAmqp(
  plan: TriggerPlan,
  firer: Pick<Firer, 'matches'>,
  routingKey: string,
  text: string,
): string[] {
  const out: string[] = []
  for (const a of plan.amqp) {
    if (out.includes(a.sop) || routingKeyError(a.trigger.routing_key) !== null) continue
    if (!routingKeyMatches(a.trigger.routing_key, routingKey)) continue
    if (firer.matches(a.trigger.condition, text)) out.push(a.sop)
  }
  return out
}

export interface AmqpSourceOptions {
  /** The URL with its password (from amqp-url.ts), and the same masked for logs. */
  url: string
  shownUrl: string
  exchange: string
  queue: string
  prefetch: number
  /** Remembers which routing keys were bound, so a key no SOP uses any more is unbound. */
  bindingsFile: string
  /** Reconnect backoff (default 500 ms doubling to 30 s). */
  reconnect?: { initialMs: number; maxMs: number }
  now: () => number
  /** Called after a delivery's admissions are stored and before it is acknowledged (crash tests). */
  beforeAck?: (d: { routingKey: string; results: FireResult[] }) => Promise<void> | void
}

export interface AmqpSource {
  setPlan(plan: TriggerPlan): Promise<void>
  /** True while consuming (connected, queue bound). */
  consuming(): boolean
  stop(): Promise<void>
}

interface Bound {
  exchange: string
  queue: string
  keys: string[]
}

function parseBound(text: string): Parsed<Bound> {
  const r = parseJson(text)
  if (!r.ok) return r
  const b = r.value as Partial<Bound> | null
  if (
    !b ||
    typeof b.exchange !== 'string' ||
    typeof b.queue !== 'string' ||
    !Array.isArray(b.keys) ||
    !b.keys.every((k) => typeof k === 'string')
  )
    return fail('IO_FAILED', 'not { exchange, queue, keys }')
  return { ok: true, value: { exchange: b.exchange, queue: b.queue, keys: b.keys } }
}

// Without it the hub binds what its SOPs want as on a first start; only a key that no SOP uses
// any more stays bound on the broker (its messages are acknowledged and start nothing).
const UNBOUND_INSTEAD =
  'the hub binds the routing keys its SOPs use as on a first start; a key no SOP uses any more stays bound until unbound on the broker'

async function readBound(file: string, log: Log): Promise<Bound | null> {
  return readOrSetAside(file, parseBound, { log, instead: UNBOUND_INSTEAD })
}

async function writeBound(file: string, b: Bound): Promise<void> {
  await writeFileAtomic(file, JSON.stringify(b))
}

export function createAmqpSource(
  firer: Firer,
  log: Log,
  initial: TriggerPlan,
  opts: AmqpSourceOptions,
): AmqpSource {
  let plan = initial
  let stopped = false
  let conn: ChannelModel | null = null
  let channel: Channel | null = null
  let consumerTag: string | null = null
  let syncing: Promise<void> = Promise.resolve()
  const inFlight = new Set<Promise<void>>()
  const retryTimers = new Set<NodeJS.Timeout>()
  const reconnect = createReconnect(opts.reconnect?.initialMs ?? 500, opts.reconnect?.maxMs ?? 30_000)
  const secret = (() => {
    try {
      return decodeURIComponent(new URL(opts.url).password)
    } catch {
      return ''
    }
  })()
  // Whatever amqplib or the broker says is logged with the password taken out, should it appear.
  const scrub = (err: unknown): string => {
    let s = errorText(err)
    s = s.split(opts.url).join(opts.shownUrl)
    if (secret !== '') s = s.split(secret).join('***')
    return s
  }
  const where = { url: opts.shownUrl, exchange: opts.exchange, queue: opts.queue }

  const wantedKeys = (): string[] =>
    [...new Set(plan.amqp.map((a) => a.trigger.routing_key))]
      .filter((k) => routingKeyError(k) === null)
      .sort()

  const syncBindings = async (ch: Channel): Promise<void> => {
    const wanted = wantedKeys()
    const before = await readBound(opts.bindingsFile, log)
    const old = before && before.exchange === opts.exchange && before.queue === opts.queue ? before.keys : []
    for (const k of old) if (!wanted.includes(k)) await ch.unbindQueue(opts.queue, opts.exchange, k)
    for (const k of wanted) await ch.bindQueue(opts.queue, opts.exchange, k)
    await writeBound(opts.bindingsFile, { exchange: opts.exchange, queue: opts.queue, keys: wanted })
    log.info({ ...where, routingKeys: wanted }, 'amqp bindings')
  }

  const ack = (ch: Channel, msg: ConsumeMessage, how: 'ack' | 'requeue' | 'reject'): void => {
    try {
      if (how === 'ack') ch.ack(msg)
      else ch.nack(msg, false, how === 'requeue')
    } catch (err) {
      // The channel closed under it: the broker puts the message back, and the once-only key
      // keeps the redelivery from starting anything twice.
      log.warn({ ...where, err: scrub(err) }, `amqp ${how} not sent (channel closed); the broker redelivers`)
    }
  }

  const handle = async (ch: Channel, msg: ConsumeMessage): Promise<void> => {
    const { exchange, routingKey, redelivered } = msg.fields
    if (exchange !== opts.exchange) {
      log.warn(
        { ...where, from: exchange, routingKey },
        'amqp message not from the configured exchange: rejected',
      )
      return ack(ch, msg, 'reject')
    }
    if (msg.content.length > MAX_TRIGGER_PAYLOAD) {
      log.warn(
        { ...where, routingKey, bytes: msg.content.length },
        `amqp message larger than ${MAX_TRIGGER_PAYLOAD} bytes ignored by triggers`,
      )
      return ack(ch, msg, 'reject')
    }
    const text = msg.content.toString('utf8')
    const sops = dispatchAmqp(plan, firer, routingKey, text)
    if (sops.length === 0) return ack(ch, msg, 'ack')
    const once = deliveryKey({
      exchange,
      routingKey,
      redelivered,
      body: msg.content,
      properties: msg.properties,
    })
    const source = `${exchange}/${routingKey}`
    const results = await Promise.all(
      sops.map((sop) => firer.fire(sop, { type: 'amqp', source, payload: text, at: opts.now(), once })),
    )
    for (const [i, r] of results.entries())
      if (r.ok && r.decision.duplicate)
        log.info(
          { sop: sops[i], source, key: once.key },
          'amqp redelivery already admitted: not started again',
        )
    if (results.every((r) => r.ok)) {
      await opts.beforeAck?.({ routingKey, results })
      return ack(ch, msg, 'ack')
    }
    // Not stored (the engine refused, a full disk): back to the queue after a pause, so a store
    // that cannot write is not spun on; SOPs already admitted answer the repeat from their mark.
    const t = setTimeout(() => {
      retryTimers.delete(t)
      if (!stopped) ack(ch, msg, 'requeue')
    }, 1000)
    retryTimers.add(t)
  }

  const onMessage = (ch: Channel, msg: ConsumeMessage | null): void => {
    if (msg === null) {
      log.warn(where, 'the AMQP broker cancelled the consumer (queue deleted?); reconnecting')
      void conn?.close().catch(() => {})
      return
    }
    const p = handle(ch, msg)
      .catch((err: unknown) => log.error({ ...where, err: scrub(err) }, 'amqp message handling failed'))
      .finally(() => inFlight.delete(p))
    inFlight.add(p)
  }

  const connect = async (): Promise<void> => {
    if (stopped) return
    let c: ChannelModel | null = null
    try {
      const amqplib = await import('amqplib')
      c = await amqplib.connect(opts.url, {
        timeout: 10_000,
        clientProperties: { connection_name: `svc hub (${opts.queue})` },
      })
      const model = c
      model.on('error', (err: Error) => log.warn({ ...where, err: scrub(err) }, 'amqp connection error'))
      model.on('close', () => {
        if (conn === model) {
          conn = null
          channel = null
          consumerTag = null
        }
        if (stopped) return
        log.warn({ ...where, retryInMs: reconnect.nextMs }, 'amqp connection lost; reconnecting')
        reconnect.schedule(() => void connect())
      })
      const ch = await model.createChannel()
      // A channel error (a refused bind, a deleted queue) closes the channel: start over whole.
      ch.on('error', (err: Error) => log.warn({ ...where, err: scrub(err) }, 'amqp channel error'))
      ch.on('close', () => {
        if (!stopped) void model.close().catch(() => {})
      })
      await ch.prefetch(opts.prefetch)
      // The broker's own exchanges (amq.*) cannot be declared, only checked.
      if (opts.exchange.startsWith('amq.')) await ch.checkExchange(opts.exchange)
      else await ch.assertExchange(opts.exchange, 'topic', { durable: true })
      await ch.assertQueue(opts.queue, { durable: true })
      if (stopped) {
        await model.close()
        return
      }
      conn = model
      channel = ch
      await (syncing = syncing.then(() => syncBindings(ch)))
      const ok = await ch.consume(opts.queue, (m) => onMessage(ch, m), { noAck: false })
      consumerTag = ok.consumerTag
      reconnect.succeeded()
      log.info(where, 'amqp consuming')
    } catch (err) {
      if (c) await c.close().catch(() => {})
      if (stopped) return
      log.warn(
        { ...where, err: scrub(err), retryInMs: reconnect.nextMs },
        'cannot consume from the AMQP broker; retrying',
      )
      reconnect.schedule(() => void connect())
    }
  }
  void connect()

  return {
    async setPlan(next) {
      plan = next
      const ch = channel
      if (!ch) return // bound on the next connect
      syncing = syncing
        .then(() => syncBindings(ch))
        .catch((err: unknown) => log.error({ ...where, err: scrub(err) }, 'amqp bindings not updated'))
      await syncing
    },
    consuming: () => consumerTag !== null,
    async stop() {
      stopped = true
      reconnect.stop()
      for (const t of retryTimers) clearTimeout(t)
      retryTimers.clear()
      const ch = channel
      if (ch && consumerTag) await ch.cancel(consumerTag).catch(() => {})
      // Deliveries being admitted finish (and are acknowledged) before the connection goes;
      // anything unacknowledged then returns to the queue.
      await Promise.allSettled([...inFlight])
      await conn?.close().catch(() => {})
      conn = null
      channel = null
      consumerTag = null
    },
  }
}
