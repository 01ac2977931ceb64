// POST /api/marketplace/listings/{slug}/purchase (market/API.md): the buyer proves a payment
// with a signature over the four Unlock lines. A transaction hash buys once: the store spends it
// and records the purchase in one step (a unique key in PostgreSQL, a sync batch under a lock in
// LevelDB), so of many concurrent requests with one hash, on any number of instances, exactly
// one succeeds.
import type { FastifyPluginAsync } from 'fastify'
import { Type, type Static } from 'typebox'
import { type Hex, getAddress, recoverMessageAddress } from 'viem'
import { unlockMessage } from '../auth/messages.ts'
import { requireAccount } from '../auth/session.ts'
import type { MarketContext } from '../context.ts'
import { CodedError } from '../../errors/codes.ts'
import { badRequest, conflict, forbidden, notFound } from '../http/errors.ts'
import { Access, accessFor } from './access.ts'
import { checkPayment } from './check-payment.ts'
import { receiptRoutes } from './receipts.ts'
import type { PurchaseRecord, UsedTxRecord } from '../store/records.ts'
import { Err, Hash, HexString, Slug } from '../http/schemas.ts'

const Body = Type.Object(
  {
    txHash: Hash,
    signature: HexString,
    /** Buy a listing whose last verification failed, after the page has said so. */
    acceptUnverified: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
)

export const purchaseRoutes =
  (ctx: MarketContext): FastifyPluginAsync =>
  async (app) => {
    await app.register(receiptRoutes(ctx))
    const lim = ctx.config.rateLimits.purchase
    app.post<{ Params: { slug: string }; Body: Static<typeof Body> }>(
      '/api/marketplace/listings/:slug/purchase',
      {
        config: { rateLimit: { max: lim.max, timeWindow: lim.windowSeconds * 1000 } },
        schema: {
          tags: ['purchase'],
          summary: 'Unlock a listing with a confirmed payment and a signature over the Unlock message',
          params: Type.Object({ slug: Slug }),
          body: Body,
          response: { 200: Type.Object({ access: Access }), '4xx': Err, '5xx': Err },
        },
      },
      async (req) => {
        const account = await requireAccount(req, ctx.session)
        const listing = await ctx.db.listings.get(req.params.slug)
        if (!listing) throw notFound(`listing ${req.params.slug} not found`)
        if (listing.sample) throw badRequest(`listing ${listing.slug} is a sample and is not for sale`)
        // A listing whose rows no longer verify is not sold as if they did: the buyer must say
        // they saw the failure. Checked before the payment is looked at, so nothing is used up.
        const last = await ctx.db.verifications.get(listing.slug)
        if (last && !last.verified && req.body.acceptUnverified !== true)
          throw conflict(
            `listing ${listing.slug} failed its last verification (block ${last.block}, ${new Date(last.at).toISOString()}: ${last.failed} of ${last.total} rows failed${last.reason ? `; ${last.reason}` : ''}); to buy it anyway send acceptUnverified: true`,
          )
        const txHash = req.body.txHash.toLowerCase() as Hex
        let signer: string
        try {
          signer = (
            await recoverMessageAddress({
              message: unlockMessage(ctx.config.displayName, listing.slug, txHash),
              signature: req.body.signature as Hex,
            })
          ).toLowerCase()
        } catch {
          throw badRequest('signature: not a valid signature')
        }
        if (signer !== account)
          throw forbidden(
            `signature: signed by ${getAddress(signer)}, not by the signed-in account ${getAddress(account)}`,
          )
        // Cheap refusal first; the authoritative check is repeated under the lock below.
        if (await ctx.db.usedTx.get(txHash))
          throw conflict(`txHash: ${txHash} was already used for a purchase`)
        const pay = await ctx.chain.payment(txHash)
        const c = checkPayment(pay, {
          txHash,
          signer,
          payout: listing.payout,
          priceWei: BigInt(listing.priceWei),
          chainId: ctx.chainConfig.chainId,
        })
        if (!c.ok) throw new CodedError(c.code, c.error)
        const now = ctx.now()
        const used: UsedTxRecord = { txHash, slug: listing.slug, buyer: signer, at: now }
        // The receipt the buyer's purchases page shows: checkPayment passed, so the payment is mined.
        const mined = pay.state === 'mined' ? pay : null
        const bought: PurchaseRecord = {
          slug: listing.slug,
          buyer: signer,
          txHash,
          at: now,
          ...(mined ? { block: mined.blockNumber.toString(), valueWei: mined.value.toString() } : {}),
          priceWei: listing.priceWei,
        }
        // The lock only queues this process's attempts with one hash; the store decides.
        const won = await ctx.locks.run(`tx:${txHash}`, () => ctx.db.recordPurchase(used, bought))
        if (!won) throw conflict(`txHash: ${txHash} was already used for a purchase`)
        return { access: accessFor(listing) }
      },
    )
  }
