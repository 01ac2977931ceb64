// POST /api/marketplace/listings/{slug}/verify (market/API.md): anyone may check a listing's
// rows against the validation registry. Every row is read (batched), the answer shows the first
// eight; `passed`/`failed` count all rows and `failures` lists the first eight failing ones.
import type { FastifyPluginAsync } from 'fastify'
import { Type } from 'typebox'
import { CodedError } from '../../errors/codes.ts'
import type { MarketContext } from '../context.ts'
import { notFound } from '../http/errors.ts'
import type { ManifestStore } from '../listings/manifest-store.ts'
import { checkListing } from './listing-check.ts'
import { Err, Slug } from '../http/schemas.ts'

export const SHOWN_ROWS = 8

const Row = Type.Object({
  index: Type.Integer(),
  paramsHash: Type.String(),
  requestHash: Type.String(),
  pass: Type.Optional(Type.Boolean()),
  reason: Type.Optional(Type.String()),
})

export const verifyRoutes =
  (ctx: MarketContext, manifests: ManifestStore): FastifyPluginAsync =>
  async (app) => {
    const lim = ctx.config.rateLimits.verify
    app.post<{ Params: { slug: string } }>(
      '/api/marketplace/listings/:slug/verify',
      {
        config: { rateLimit: { max: lim.max, timeWindow: lim.windowSeconds * 1000 } },
        schema: {
          tags: ['listings'],
          summary:
            'Check every manifest row against the validation registry (no auth); shows the first eight rows',
          params: Type.Object({ slug: Slug }),
          response: {
            200: Type.Object({
              preview: Type.Boolean(),
              total: Type.Integer(),
              rows: Type.Array(Row),
              verified: Type.Optional(Type.Boolean()),
              passed: Type.Optional(Type.Integer()),
              failed: Type.Optional(Type.Integer()),
              failures: Type.Optional(Type.Array(Row)),
            }),
            '4xx': Err,
            '5xx': Err,
          },
        },
      },
      async (req) => {
        const listing = await ctx.db.listings.get(req.params.slug)
        if (!listing) throw notFound(`listing ${req.params.slug} not found`)
        if (listing.sample) {
          const manifest = await manifests.get(listing.manifestCid)
          // A sample listing is demo data: no chain read, and no pass/fail is claimed.
          return {
            preview: true,
            total: manifest.rows.length,
            rows: manifest.rows
              .slice(0, SHOWN_ROWS)
              .map((r, index) => ({ index, paramsHash: r.paramsHash, requestHash: r.requestHash })),
          }
        }
        const c = await checkListing(ctx, manifests, listing)
        if (!c.ok)
          throw new CodedError(c.code, `chain unreachable while reading the validation registry: ${c.error}`)
        const s = c.summary
        return {
          preview: false,
          total: s.total,
          rows: s.verdicts.slice(0, SHOWN_ROWS),
          verified: s.failed === 0,
          passed: s.passed,
          failed: s.failed,
          failures: s.verdicts.filter((v) => !v.pass).slice(0, SHOWN_ROWS),
        }
      },
    )
  }
