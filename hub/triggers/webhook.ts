// Webhook triggers: a Fastify gateway that answers exactly each configured path (POST), with
// the body as the payload (JSON when the request says JSON, else text), and replies
// `{ runId, outcome }`. Anything else is 404 (unknown path) or 405 (known path, wrong method),
// as `{ error }`. Bodies are bounded (413 beyond the limit).
import Fastify, { type FastifyInstance } from 'fastify'
import rateLimit from '@fastify/rate-limit'
import type { Json } from '../../sops/types.ts'
import type { Log } from '../log.ts'
import type { Firer } from './fire.ts'
import type { TriggerPlan } from './plan.ts'

export interface WebhookOptions {
  host: string
  port: number
  bodyLimit: number
  /** Requests per minute per client address; 0 = no limit. */
  rateLimit?: number
  now?: () => number
}

export interface WebhookGateway {
  app: FastifyInstance
  /** `http://host:port` once listening. */
  url: string
  setPlan(plan: TriggerPlan): void
  stop(): Promise<void>
}

const STATUS_BY_OUTCOME: Record<string, number> = {
  started: 202,
  deferred: 202,
  held: 202,
  coalesced: 200,
  dropped: 200,
  cooldown: 200,
}

export async function buildWebhookApp(
  firer: Firer,
  log: Log,
  opts: Pick<WebhookOptions, 'bodyLimit' | 'rateLimit' | 'now'>,
  getPlan: () => TriggerPlan,
): Promise<FastifyInstance> {
  const now = opts.now ?? Date.now
  const app = Fastify({ logger: false, bodyLimit: opts.bodyLimit })
  if (opts.rateLimit && opts.rateLimit > 0) {
    // A gateway reachable from the network must not let one caller queue unbounded runs.
    await app.register(rateLimit, {
      max: opts.rateLimit,
      timeWindow: 60_000,
      errorResponseBuilder: (_req, ctx) => ({
        statusCode: 429,
        error: `rate limited: more than ${ctx.max} requests a minute; retry in ${ctx.after}`,
      }),
    })
  }
  // Every content type arrives as text; JSON is parsed here so a bad JSON body can be
  // answered with a message that says so, instead of Fastify's generic one.
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('*', { parseAs: 'string' }, (_req, body, done) => done(null, body))

  app.setErrorHandler((err: { statusCode?: number; message: string }, _req, reply) => {
    const status = err.statusCode && err.statusCode >= 400 && err.statusCode < 600 ? err.statusCode : 500
    const error =
      status === 413
        ? `body is larger than ${opts.bodyLimit} bytes`
        : status === 500
          ? 'internal error'
          : ((err as { error?: string }).error ?? err.message)
    if (status === 500) log.error({ err: err.message }, 'webhook gateway error')
    void reply.code(status).send({ error })
  })

  app.all('/*', async (req, reply) => {
    const path = req.url.split('?')[0] ?? '/'
    const hook = getPlan().webhook.get(path)
    if (!hook) return reply.code(404).send({ error: `no webhook at ${path}` })
    if (req.method !== 'POST')
      return reply
        .code(405)
        .header('allow', 'POST')
        .send({ error: `webhook ${path} accepts POST only` })
    const raw = typeof req.body === 'string' ? req.body : ''
    let payload: string | Json = raw
    const type = (req.headers['content-type'] ?? '').toLowerCase()
    if (type.includes('json') && raw.trim() !== '') {
      try {
        payload = JSON.parse(raw) as Json
      } catch (err) {
        return reply
          .code(400)
          .send({ error: `body is not valid JSON: ${err instanceof Error ? err.message : String(err)}` })
      }
    }
    const result = await firer.fire(hook.sop, { type: 'webhook', source: path, payload, at: now() })
    if (!result.ok)
      return reply.code(500).send({ error: `the engine could not take the trigger: ${result.error}` })
    const { outcome, runId, reason } = result.decision
    return reply.code(STATUS_BY_OUTCOME[outcome] ?? 200).send({ runId: runId ?? null, outcome, reason })
  })
  return app
}

export async function startWebhookGateway(
  firer: Firer,
  log: Log,
  opts: WebhookOptions,
  initial: TriggerPlan,
): Promise<WebhookGateway> {
  let plan = initial
  const app = await buildWebhookApp(firer, log, opts, () => plan)
  const address = await app.listen({ host: opts.host, port: opts.port })
  log.info({ url: address, paths: [...plan.webhook.keys()] }, 'webhook gateway listening')
  return {
    app,
    url: address,
    setPlan(next) {
      plan = next
    },
    async stop() {
      await app.close()
    },
  }
}
