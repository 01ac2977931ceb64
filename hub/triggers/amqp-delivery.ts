// Which message a delivery is, for once-only admission (engine-api: `TriggerEvent.once`). Pure.
//
// With a message id (set by the publisher) the id is the message: a publisher that resends after
// a lost confirm, or a broker that redelivers, is admitted once. Without one, a hash of what was
// delivered (exchange, routing key, the properties a publisher sets, the body) stands in, checked
// only on a redelivery: RabbitMQ sets `redelivered` on anything it may have delivered before, and
// a delivery without it has never been seen (RabbitMQ: Reliability Guide, "Consumer Acknowledgements
// and Redelivery"), so two identical messages sent on purpose still start two runs.
import { createHash } from 'node:crypto'

export interface DeliveryFacts {
  exchange: string
  routingKey: string
  redelivered: boolean
  body: Buffer
  properties: {
    messageId?: unknown
    contentType?: unknown
    contentEncoding?: unknown
    headers?: unknown
    correlationId?: unknown
    replyTo?: unknown
    timestamp?: unknown
    type?: unknown
    userId?: unknown
    appId?: unknown
  }
}

export interface DeliveryKey {
  key: string
  check: boolean
}

/** JSON with object keys sorted, so equal headers hash equally whatever their order. */
function stable(v: unknown): unknown {
  if (Buffer.isBuffer(v)) return { buffer: v.toString('base64') }
  if (Array.isArray(v)) return v.map(stable)
  if (typeof v === 'bigint') return v.toString()
  if (v !== null && typeof v === 'object')
    return Object.fromEntries(
      Object.keys(v)
        .sort()
        .map((k) => [k, stable((v as Record<string, unknown>)[k])]),
    )
  return v
}

export function deliveryKey(d: DeliveryFacts): DeliveryKey {
  const id = d.properties.messageId
  if (typeof id === 'string' && id !== '') return { key: `amqp-id:${d.exchange}:${id}`, check: true }
  const p = d.properties
  const h = createHash('sha256')
  h.update(
    JSON.stringify(
      stable([
        d.exchange,
        d.routingKey,
        p.contentType ?? null,
        p.contentEncoding ?? null,
        p.headers ?? null,
        p.correlationId ?? null,
        p.replyTo ?? null,
        p.timestamp ?? null,
        p.type ?? null,
        p.userId ?? null,
        p.appId ?? null,
      ]),
    ),
  )
  h.update('\n')
  h.update(d.body)
  return { key: `amqp-sha256:${h.digest('hex')}`, check: d.redelivered }
}
