// GET /api/marketplace/listings/{slug}/file?part=data|manifest (market/API.md): the listing's
// owner (the key's wallet or the account that asked for the key) or a buyer, signed in.
// GET /api/marketplace/listings/{slug}/image: the public cover image.
import { Readable } from 'node:stream'
import type { FastifyPluginAsync } from 'fastify'
import { Type } from 'typebox'
import { requireAccount } from '../auth/session.ts'
import type { MarketContext } from '../context.ts'
import { catFile, parseCid } from './unixfs.ts'
import { badRequest, forbidden, notFound } from '../http/errors.ts'
import { purchaseKey } from '../purchase/access.ts'
import { Err, Slug } from '../http/schemas.ts'

export const fileRoutes =
  (ctx: MarketContext): FastifyPluginAsync =>
  async (app) => {
    app.get<{ Params: { slug: string }; Querystring: { part?: string } }>(
      '/api/marketplace/listings/:slug/file',
      {
        schema: {
          tags: ['purchase'],
          summary: 'Download the data or manifest file (owner or buyer, signed in)',
          params: Type.Object({ slug: Slug }),
          querystring: Type.Object({ part: Type.Optional(Type.String()) }),
          response: { '4xx': Err },
        },
      },
      async (req, reply) => {
        const part = req.query.part
        if (part === undefined || part === '') throw badRequest('part: required, "data" or "manifest"')
        if (part !== 'data' && part !== 'manifest')
          throw badRequest(`part: must be "data" or "manifest" (got "${part.slice(0, 40)}")`)
        const account = await requireAccount(req, ctx.session)
        const l = await ctx.db.listings.get(req.params.slug)
        if (!l) throw notFound(`listing ${req.params.slug} not found`)
        const owner = account === l.ownerWallet || account === l.ownerAccount
        if (!owner && !(await ctx.db.purchases.get(purchaseKey(l.slug, account))))
          throw forbidden(`listing ${l.slug}: only its owner or a buyer may download its files`)
        const cid = part === 'data' ? l.dataCid : l.manifestCid
        const name = part === 'data' ? `${l.slug}.jsonl` : `${l.slug}.manifest.json`
        return (
          reply
            .header(
              'content-type',
              part === 'data' ? 'application/x-ndjson; charset=utf-8' : 'application/json; charset=utf-8',
            )
            .header('content-disposition', `attachment; filename="${name}"`)
            // The bytes are the seller's: a browser must not sniff them into HTML or script.
            .header('x-content-type-options', 'nosniff')
            .header('x-content-cid', cid)
            .header('cache-control', 'private, no-store')
            .send(Readable.from(catFile(parseCid(cid), ctx.blocks)))
        )
      },
    )

    app.get<{ Params: { slug: string } }>(
      '/api/marketplace/listings/:slug/image',
      {
        schema: {
          tags: ['listings'],
          summary: "The listing's cover image",
          params: Type.Object({ slug: Slug }),
          response: { '4xx': Err },
        },
      },
      async (req, reply) => {
        const l = await ctx.db.listings.get(req.params.slug)
        if (!l) throw notFound(`listing ${req.params.slug} not found`)
        if (!l.imageCid || !l.imageType) throw notFound(`listing ${l.slug} has no image`)
        return reply
          .header('content-type', l.imageType)
          .header('x-content-type-options', 'nosniff')
          .header('cache-control', 'public, max-age=31536000, immutable')
          .send(Readable.from(catFile(parseCid(l.imageCid), ctx.blocks)))
      },
    )
  }
