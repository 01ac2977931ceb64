// Listing reads for the website: a filtered, searchable, sorted list and one listing by slug.
// Public; no CIDs (those are what a purchase buys). The list is one indexed read of the store
// (market/store/), paged by cursor: its cost does not grow with the number of listings.
import type { FastifyPluginAsync } from 'fastify'
import { Type, type Static } from 'typebox'
import { parseEther } from 'viem'
import type { MarketContext } from '../context.ts'
import { badRequest, notFound } from '../http/errors.ts'
import { LICENSES, MACHINE_TYPES } from '../../records/listing-fields.ts'
import { decodeCursor, encodeCursor, words } from '../store/browse-order.ts'
import { SORTS, type Sort } from '../store/store.ts'
import { Err, Slug } from '../http/schemas.ts'
import { ListingView, listingView } from './view.ts'

const Query = Type.Object({
  machineType: Type.Optional(Type.String()),
  license: Type.Optional(Type.String()),
  minPrice: Type.Optional(Type.String({ maxLength: 40 })),
  maxPrice: Type.Optional(Type.String({ maxLength: 40 })),
  q: Type.Optional(Type.String({ maxLength: 200 })),
  sort: Type.Optional(Type.String()),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
  /** The `next` (or `prev`, with `before`) of the previous answer. */
  cursor: Type.Optional(Type.String({ maxLength: 400 })),
  before: Type.Optional(Type.String({ maxLength: 400 })),
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000 })),
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
            'Listings, newest first (sort: newest, price, rows); filter by machineType, license, price range (native units); q searches title and summary words; page with cursor',
          querystring: Query,
          response: {
            200: Type.Object({
              total: Type.Integer(),
              listings: Type.Array(ListingView),
              next: Type.Union([Type.String(), Type.Null()]),
              prev: Type.Union([Type.String(), Type.Null()]),
            }),
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
        const sort = (q.sort ?? 'newest') as Sort
        if (!(SORTS as readonly string[]).includes(sort))
          throw badRequest(`sort: must be one of ${SORTS.join(', ')}`)
        if (q.cursor !== undefined && q.before !== undefined)
          throw badRequest('cursor: give cursor (the next page) or before (the previous page), not both')
        const cursorParam = (name: 'cursor' | 'before', v: string | undefined) => {
          if (v === undefined) return undefined
          const c = decodeCursor(v)
          if (!c) throw badRequest(`${name}: not a cursor from this list; start again without it`)
          if (c.sort !== sort) throw badRequest(`${name}: made for sort=${c.sort}, not sort=${sort}`)
          return c
        }
        const after = cursorParam('cursor', q.cursor)
        const before = cursorParam('before', q.before)
        const r = await ctx.db.browse({
          ...(q.machineType ? { machineType: q.machineType } : {}),
          ...(q.license ? { license: q.license } : {}),
          ...(min !== null ? { minWei: min } : {}),
          ...(max !== null ? { maxWei: max } : {}),
          words: words(q.q ?? ''),
          sort,
          limit: q.limit ?? 24,
          ...(after ? { after } : {}),
          ...(before ? { before } : {}),
          ...(q.offset && !after && !before ? { offset: q.offset } : {}),
        })
        const checks = await ctx.db.verifications.getMany(r.listings.map((l) => l.slug))
        return {
          total: r.total,
          listings: r.listings.map((l, i) => listingView(l, checks[i])),
          next: r.next ? encodeCursor(r.next) : null,
          prev: r.prev ? encodeCursor(r.prev) : null,
        }
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
