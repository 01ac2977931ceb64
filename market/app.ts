// The market app: composes the plugins (sessions, keys, listings, verify, purchase, files,
// pages) over one context. Each route group is its own encapsulated plugin; this file only wires.
import { randomBytes } from 'node:crypto'
import { mkdir, readFile } from 'node:fs/promises'
import { writeFileAtomic } from '../files/atomic-file.ts'
import { join } from 'node:path'
import cookie from '@fastify/cookie'
import multipart from '@fastify/multipart'
import rateLimit from '@fastify/rate-limit'
import swagger from '@fastify/swagger'
import Fastify, { type FastifyInstance, type FastifyPluginAsync, type FastifyServerOptions } from 'fastify'
import { type MarketChain, viemMarketChain } from './chain/market-chain.ts'
import type { MarketConfig } from './config.ts'
import type { MarketContext } from './context.ts'
import { fsBlockStore } from './files/blockstore.ts'
import { CodedError } from '../errors/codes.ts'
import { type ErrorLog, installJsonErrors } from '../errors/fastify.ts'
import { createMarketLog } from './log.ts'
import { ManifestStore } from './listings/manifest-store.ts'
import { seedSamples } from './listings/samples.ts'
import { MULTIPART_LIMITS } from './listings/upload.ts'
import { agentListingRoutes } from './listings/agent-routes.ts'
import { authRoutes } from './auth/routes.ts'
import { fileRoutes } from './files/routes.ts'
import { keyRoutes } from './keys/routes.ts'
import { listingReadRoutes } from './listings/read-routes.ts'
import { purchaseRoutes } from './purchase/routes.ts'
import { type Reverifier, startReverifier } from './verify/reverify.ts'
import { verifyRoutes } from './verify/routes.ts'
import { openMarketStore } from './store/open.ts'
import type { MarketStore } from './store/store.ts'
import { KeyedLock } from './store/keyed-lock.ts'

export interface MarketAppOptions {
  /** With `chain` resolved (see config.ts resolveChain / chainFromInfo). */
  config: MarketConfig
  /** Chain reads; default: viem against `config.chain.rpcUrl`. */
  chain?: MarketChain
  logger?: FastifyServerOptions['logger']
  /** Where a 5xx is logged with its error; default the market's logger on stderr (log.ts). */
  log?: ErrorLog
  /** The website mounts here: a plugin given the same context as the API. */
  pages?: (ctx: MarketContext) => FastifyPluginAsync
  /** More plugins to mount beside the API (e.g. the attestor). */
  plugins?: FastifyPluginAsync[]
  now?: () => number
}

export interface MarketApp {
  app: FastifyInstance
  ctx: MarketContext
  /** The background re-check of every listing (`[verify] intervalSeconds`). */
  reverifier: Reverifier
  close(): Promise<void>
}

async function cookieSecret(config: MarketConfig, db: MarketStore): Promise<string> {
  if (config.cookieSecret) return config.cookieSecret
  // Several instances on one database must sign cookies alike: the database holds the key.
  const shared = await db.sharedSecret('cookie', randomBytes(32).toString('base64url'))
  if (shared) return shared
  const file = join(config.dataDir, 'cookie.secret')
  const read = async (): Promise<string | undefined> => {
    const s = (await readFile(file, 'utf8').catch(() => '')).trim()
    return s.length >= 32 ? s : undefined
  }
  const kept = await read()
  if (kept) return kept
  const s = randomBytes(32).toString('base64url')
  try {
    // Atomic, so a power cut never leaves a short secret; exclusive, so a second instance making
    // one at the same moment keeps the first one's (hub/files/README.md: Small files). A file
    // there already but too short to be a secret is replaced.
    await writeFileAtomic(file, s + '\n', { mode: 0o600, exclusive: true })
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
    const theirs = await read()
    if (theirs) return theirs
    await writeFileAtomic(file, s + '\n', { mode: 0o600 })
  }
  return s
}

export async function buildMarketApp(o: MarketAppOptions): Promise<MarketApp> {
  const config = o.config
  if (!config.chain) throw new Error('market config has no chain: resolve it first')
  await mkdir(config.dataDir, { recursive: true })
  const db = await openMarketStore(config)
  const now = o.now ?? Date.now
  const ctx: MarketContext = {
    config,
    chainConfig: config.chain,
    db,
    chain: o.chain ?? viemMarketChain(config.chain),
    blocks: fsBlockStore(config.blocksDir ?? join(config.dataDir, 'blocks')),
    locks: new KeyedLock(),
    session: { db, sessionSeconds: config.sessionSeconds, publicUrl: config.publicUrl, now },
    now,
  }
  let reverifier!: Reverifier
  // Unknown body properties are refused, not silently dropped (Fastify's default strips them).
  const app = Fastify({
    logger: o.logger ?? false,
    trustProxy: config.trustProxy,
    ajv: { customOptions: { removeAdditional: false } },
  })
  try {
    installJsonErrors(app, o.log ?? createMarketLog())
    await app.register(cookie, { secret: await cookieSecret(config, db) })
    await app.register(rateLimit, {
      global: false,
      errorResponseBuilder: (_req, c) =>
        new CodedError('RATE_LIMITED', `rate limited: at most ${c.max} requests per ${c.after}; retry later`),
    })
    await app.register(swagger, {
      openapi: {
        openapi: '3.0.3',
        info: { title: `${config.displayName} marketplace API`, version: '1' },
        components: {
          securitySchemes: {
            agentKey: { type: 'http', scheme: 'bearer', description: 'Agent key svc_…' },
            session: { type: 'apiKey', in: 'cookie', name: 'svc_session' },
          },
        },
      },
    })
    const manifests = new ManifestStore(ctx.blocks)
    await app.register(authRoutes(ctx))
    await app.register(keyRoutes(ctx))
    await app.register(async (scope) => {
      await scope.register(multipart, { limits: MULTIPART_LIMITS })
      await scope.register(agentListingRoutes(ctx))
    })
    await app.register(listingReadRoutes(ctx))
    await app.register(verifyRoutes(ctx, manifests))
    await app.register(purchaseRoutes(ctx))
    await app.register(fileRoutes(ctx))
    if (o.pages) await app.register(o.pages(ctx))
    for (const p of o.plugins ?? []) await app.register(p)
    app.get('/api/openapi.json', { schema: { hide: true } }, async () => app.swagger())
    if (config.samples) await seedSamples(db, ctx.blocks, config.chain.payout, now())
    await app.ready()
    reverifier = startReverifier(ctx, manifests, config.reverifySeconds, (m) => app.log.warn(m))
  } catch (err) {
    await app.close().catch(() => undefined)
    await db.close()
    throw err
  }
  return {
    app,
    ctx,
    reverifier,
    async close() {
      await reverifier.stop()
      await app.close()
      await db.close()
    },
  }
}
