// Listing reads for the website: a filtered, searchable list and one listing by slug. Public;
// no CIDs (those are what a purchase buys).
import type { FastifyPluginAsync } from 'fastify'
import { Type, type Static } from 'typebox'
import { parseEther } from 'viem'
import type { MarketContext } from '../context.ts'
import { badRequest, notFound } from '../http/errors.ts'
import { LICENSES, MACHINE_TYPES } from '../../records/listing-fields.ts'
import { allValues } from '../store/db.ts'
import { Err, Slug } from '../http/schemas.ts'
import { ListingView, listingView } from './view.ts'

const Query = Type.Object({
  machineType: Type.Optional(Type.String()),
  license: Type.Optional(Type.String()),
  minPrice: Type.Optional(Type.String({ maxLength: 40 })),
  maxPrice: Type.Optional(Type.String({ maxLength: 40 })),
  q: Type.Optional(Type.String({ maxLength: 200 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
  offset: Type.Optional(Type.Integer({ minimum: 0 })),
})

function price(name: string, v: string | undefined): bigint | null {
  if (v === undefined || v === '') return null
  if (!/^(0|[1-9][0-9]{0,29})(\.[0-9]{1,18})?$/.test(v))
    throw badRequest(`${name}: must be a decimal price in native units, like 0.05`)
  return parseEther(v)
}

export const listingReadRoutes =
  (ctx: MarketContext): FastifyPluginAsync =>
  async (app) => {
    app.get<{ Querystring: Static<typeof Query> }>(
      '/api/marketplace/listings',
      {
        schema: {
          tags: ['listings'],
          summary:
            'Listings, newest first; filter by machineType, license, price range (native units); q searches titles',
          querystring: Query,
          response: {
            200: Type.Object({ total: Type.Integer(), listings: Type.Array(ListingView) }),
            '4xx': Err,
          },
        },
      },
      async (req) => {
        const q = req.query
        if (q.machineType !== undefined && !(MACHINE_TYPES as readonly string[]).includes(q.machineType))
          throw badRequest(`machineType: must be one of ${MACHINE_TYPES.join(', ')}`)
        if (q.license !== undefined && !(LICENSES as readonly string[]).includes(q.license))
          throw badRequest(`license: must be one of ${LICENSES.join(', ')}`)
        const min = price('minPrice', q.minPrice)
        const max = price('maxPrice', q.maxPrice)
        const words = (q.q ?? '').toLowerCase().split(/\s+/).filter(Boolean)
        const all = (await allValues(ctx.db.listings)).filter((l) => {
          if (q.machineType && l.machineType !== q.machineType) return false
          if (q.license && l.license !== q.license) return false
          const p = BigInt(l.priceWei)
          if (min !== null && p < min) return false
          if (max !== null && p > max) return false
          const t = l.title.toLowerCase()
          return words.every((w) => t.includes(w))
        })
        all.sort((a, b) => b.createdAt - a.createdAt || a.slug.localeCompare(b.slug))
        const offset = q.offset ?? 0
        const limit = q.limit ?? 24
        const page = all.slice(offset, offset + limit)
        const checks = await Promise.all(page.map((l) => ctx.db.verifications.get(l.slug)))
        return { total: all.length, listings: page.map((l, i) => listingView(l, checks[i])) }
      },
    )

    app.get<{ Params: { slug: string } }>(
      '/api/marketplace/listings/:slug',
      {
        schema: {
          tags: ['listings'],
          summary: 'One listing',
          params: Type.Object({ slug: Slug }),
          response: { 200: ListingView, '4xx': Err },
        },
      },
      async (req) => {
        const l = await ctx.db.listings.get(req.params.slug)
        if (!l) throw notFound(`listing ${req.params.slug} not found`)
        return listingView(l, await ctx.db.verifications.get(l.slug))
      },
    )
  }
