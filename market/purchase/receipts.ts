// GET /api/marketplace/purchases: the signed-in buyer's receipts, newest first: which listing,
// the payment's transaction hash and block, what was paid, and when the market unlocked it.
// A buyer's purchases come from the store's buyer index (both engines), newest first.
import type { FastifyPluginAsync } from 'fastify'
import { Type, type Static } from 'typebox'
import { formatEther } from 'viem'
import { requireAccount } from '../auth/session.ts'
import type { MarketContext } from '../context.ts'
import { Err } from '../http/schemas.ts'
import type { ListingRecord, PurchaseRecord } from '../store/records.ts'

export const Receipt = Type.Object({
  slug: Type.String(),
  title: Type.String(),
  url: Type.String(),
  txHash: Type.String(),
  /** Decimal block number, null for purchases recorded before receipts were kept. */
  block: Type.Union([Type.String(), Type.Null()]),
  /** What the transaction paid and the listing's price then, in native units. */
  paidNative: Type.Union([Type.String(), Type.Null()]),
  priceNative: Type.Union([Type.String(), Type.Null()]),
  at: Type.String(),
})
export type ReceiptView = Static<typeof Receipt>

export function receiptView(p: PurchaseRecord, l: ListingRecord | undefined): ReceiptView {
  const price = p.priceWei ?? l?.priceWei
  return {
    slug: p.slug,
    title: l?.title ?? p.slug,
    url: `/marketplace/${p.slug}`,
    txHash: p.txHash,
    block: p.block ?? null,
    paidNative: p.valueWei ? formatEther(BigInt(p.valueWei)) : null,
    priceNative: price ? formatEther(BigInt(price)) : null,
    at: new Date(p.at).toISOString(),
  }
}

/** A buyer's receipts, newest first. */
export async function receiptsOf(ctx: MarketContext, buyer: string): Promise<ReceiptView[]> {
  const mine = await ctx.db.purchasesOf(buyer.toLowerCase())
  const listings = await ctx.db.listings.getMany(mine.map((p) => p.slug))
  return mine.map((p, i) => receiptView(p, listings[i]))
}

export const receiptRoutes =
  (ctx: MarketContext): FastifyPluginAsync =>
  async (app) => {
    app.get(
      '/api/marketplace/purchases',
      {
        schema: {
          tags: ['purchase'],
          summary: "The signed-in account's purchases with their receipts (tx hash, block, price, time)",
          response: { 200: Type.Object({ purchases: Type.Array(Receipt) }), '4xx': Err },
        },
      },
      async (req) => ({ purchases: await receiptsOf(ctx, await requireAccount(req, ctx.session)) }),
    )
  }
