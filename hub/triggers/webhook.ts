// Webhook triggers: a Fastify gateway that answers exactly each configured path (POST), with
// the body as the payload (JSON when the request says JSON, else text), and replies
// `{ runId, outcome }`. Anything else is 404 (unknown path) or 405 (known path, wrong method),
// as `{ error, code }`. Bodies are bounded (413 beyond the limit). A path with a secret in hub.toml
// answers only requests signed GitHub's way (webhook-signature.ts): 401 otherwise, nothing started.
import Fastify, { type FastifyInstance } from 'fastify'
import rateLimit from '@fastify/rate-limit'
import { CodedError } from '../../errors/codes.ts'
import { errorText } from '../../errors/text.ts'
import { installJsonErrors } from '../../errors/fastify.ts'
import type { Json } from '../../sops/types.ts'
import type { Log } from '../log.ts'
import type { Firer } from './fire.ts'
import type { TriggerPlan } from './plan.ts'
import { type SecretRef, loadWebhookSecrets, unsignedWebhooks } from './webhook-secrets.ts'
import { SIGNATURE_HEADER, signatureError } from './webhook-signature.ts'

export interface WebhookOptions {
  host: string
  port: number
  bodyLimit: number
  /** Requests per minute per client address; 0 = no limit. */
  rateLimit?: number
  /** `[webhook.secrets]`: path → where its secret is. A path listed here needs a signature. */
  secrets?: Readonly<Record<string, SecretRef>>
  env?: NodeJS.ProcessEnv
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
  opts: Pick<WebhookOptions, 'bodyLimit' | 'rateLimit' | 'now'> & {
    /** Loaded secrets by path. */
    secrets?: ReadonlyMap<string, Buffer>
    /** Paths that must be signed but have no secret (added by a reload on an open host): refused. */
    mustSign?: () => ReadonlySet<string>
  },
  getPlan: () => TriggerPlan,
): Promise<FastifyInstance> {
  const secrets = opts.secrets ?? new Map<string, Buffer>()
  const now = opts.now ?? Date.now
  const app = Fastify({ logger: false, bodyLimit: opts.bodyLimit })
  if (opts.rateLimit && opts.rateLimit > 0) {
    // A gateway reachable from the network must not let one caller queue unbounded runs.
    await app.register(rateLimit, {
      max: opts.rateLimit,
      timeWindow: 60_000,
      errorResponseBuilder: (_req, ctx) =>
        new CodedError(
          'RATE_LIMITED',
          `rate limited: more than ${ctx.max} requests a minute; retry in ${ctx.after}`,
        ),
    })
  }
  // Every content type arrives as the exact bytes received: the signature is over those bytes,
  // not over a re-encoding. JSON is parsed here so a bad JSON body can be answered with a
  // message that says so, instead of Fastify's generic one.
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body))

  installJsonErrors(app, log, { tooLarge: `body is larger than ${opts.bodyLimit} bytes` })

  app.all('/*', async (req, reply) => {
    const path = req.url.split('?')[0] ?? '/'
    const hook = getPlan().webhook.get(path)
    if (!hook) throw new CodedError('NOT_FOUND', `no webhook at ${path}`)
    if (req.method !== 'POST') {
      reply.header('allow', 'POST')
      throw new CodedError('METHOD_NOT_ALLOWED', `webhook ${path} accepts POST only`)
    }
    const bytes = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0)
    const secret = secrets.get(path)
    if (secret) {
      const bad = signatureError(secret, bytes, req.headers[SIGNATURE_HEADER])
      if (bad) {
        log.warn({ path, ip: req.ip, reason: bad }, 'webhook refused: bad signature')
        throw new CodedError('UNAUTHORIZED', bad)
      }
    } else if (opts.mustSign?.().has(path)) {
      throw new CodedError(
        'UNAUTHORIZED',
        `webhook ${path} has no secret configured and the gateway is not on loopback: nothing is accepted`,
      )
    }
    const raw = bytes.toString('utf8')
    let payload: string | Json = raw
    const type = (req.headers['content-type'] ?? '').toLowerCase()
    if (type.includes('json') && raw.trim() !== '') {
      try {
        payload = JSON.parse(raw) as Json
      } catch (err) {
        throw new CodedError('BAD_INPUT', `body is not valid JSON: ${errorText(err)}`)
      }
    }
    const result = await firer.fire(hook.sop, { type: 'webhook', source: path, payload, at: now() })
    // Not recorded for want of disk (hub/disk/): the caller may try again later, and is told so.
    if (!result.ok && result.code === 'DISK_FULL') {
      reply.header('retry-after', '60')
      throw new CodedError('DISK_FULL', result.error)
    }
    if (!result.ok) throw new CodedError('INTERNAL', `the engine could not take the trigger: ${result.error}`)
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
  const loaded = await loadWebhookSecrets(opts.secrets ?? {}, opts.env)
  if (!loaded.ok) throw new Error(loaded.error)
  const { secrets } = loaded
  const unsigned = unsignedWebhooks(plan, opts.host, secrets)
  if (unsigned.length > 0)
    throw new Error(unsigned.map((d) => `${d.file}:${d.line}: ${d.message}`).join('\n'))
  for (const path of secrets.keys())
    if (!plan.webhook.has(path)) log.warn({ path }, 'webhook.secrets names a path no SOP answers')
  // A reload cannot refuse to start: an unsigned trigger it adds on an open host is refused per request.
  let mustSign = new Set<string>()
  const app = await buildWebhookApp(firer, log, { ...opts, secrets, mustSign: () => mustSign }, () => plan)
  const address = await app.listen({ host: opts.host, port: opts.port })
  log.info({ url: address, paths: [...plan.webhook.keys()] }, 'webhook gateway listening')
  return {
    app,
    url: address,
    setPlan(next) {
      const problems = unsignedWebhooks(next, opts.host, secrets)
      for (const d of problems) log.error({ file: d.file, line: d.line }, `${d.file}:${d.line}: ${d.message}`)
      mustSign = new Set(problems.length > 0 ? [...next.webhook.keys()].filter((p) => !secrets.has(p)) : [])
      plan = next
    },
    async stop() {
      await app.close()
    },
  }
}
