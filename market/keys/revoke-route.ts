// DELETE /api/marketplace/keys/{id}: the owner revokes one of their agent keys (key issue
// also revokes, as a side effect: market/API.md, "Agent keys"; this is the owner's own way, e.g. for a device
// that was lost). Owner = the signed-in account that asked for the key, or the key's wallet: the
// same accounts GET /api/marketplace/keys lists it to. The key stays on record, so a device that
// still sends it is told it was revoked (403) rather than that it is unknown.
import type { FastifyPluginAsync } from 'fastify'
import { Type } from 'typebox'
import { requireAccount } from '../auth/session.ts'
import type { MarketContext } from '../context.ts'
import { conflict, forbidden, notFound } from '../http/errors.ts'
import { Err } from '../http/schemas.ts'
import { KeyView, keyView } from './schemas.ts'

export const keyRevokeRoute =
  (ctx: MarketContext): FastifyPluginAsync =>
  async (app) => {
    app.delete<{ Params: { id: string } }>(
      '/api/marketplace/keys/:id',
      {
        config: {
          rateLimit: {
            max: ctx.config.rateLimits.keys.max,
            timeWindow: ctx.config.rateLimits.keys.windowSeconds * 1000,
          },
        },
        schema: {
          tags: ['keys'],
          summary: 'Revoke one of your agent keys: it can no longer list (owner only)',
          params: Type.Object({ id: Type.String({ pattern: '^[A-Za-z0-9_-]{1,64}$' }) }),
          response: { 200: Type.Object({ key: KeyView }), '4xx': Err },
        },
      },
      async (req) => {
        const account = await requireAccount(req, ctx.session)
        const id = req.params.id
        return ctx.locks.run(`key:${id}`, async () => {
          const k = await ctx.db.keys.get(id)
          if (!k) throw notFound(`key ${id} not found`)
          if (k.account !== account && k.wallet !== account)
            throw forbidden(`key ${id}: only the account that asked for it or its wallet may revoke it`)
          if (k.revokedAt !== null)
            throw conflict(`key ${id} is already revoked: ${k.revokedReason ?? 'revoked'}`)
          const r = { ...k, revokedAt: ctx.now(), revokedReason: 'revoked by its owner' }
          await ctx.db.keys.put(id, r)
          return { key: keyView(r) }
        })
      },
    )
  }
