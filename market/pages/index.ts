// The market website (issue 7): server-rendered pages over the same context as the API, plus
// small module scripts for the wallet steps. Mounted by buildMarketApp({ pages: marketPages }).
//   GET /                   → /marketplace
//   GET /marketplace        browse with filters and search (the read API's query, rendered)
//   GET /marketplace/:slug  one listing: verify, buy, download
//   GET /agents/:agentId    one machine agent: operations over time and its listings
//   GET /keys               machine owners' agent keys
//   GET /assets/:name       the scripts and the stylesheet
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import { getAddress } from 'viem'
import { currentSession } from '../auth/session.ts'
import { allValues } from '../store/db.ts'
import type { MarketContext } from '../context.ts'
import { purchaseKey } from '../routes/purchase.ts'
import { listingView } from '../routes/listings.ts'
import { agentMain } from './agent.ts'
import { assetRoutes } from './assets.ts'
import { type BrowseResult, apiQuery, browseMain, browseQuery } from './browse.ts'
import { dailyRows } from './chart.ts'
import { type Html, html } from './html.ts'
import { type KeyRow, keysMain } from './keys.ts'
import { type Shell, page } from './layout.ts'
import { type Access, listingMain } from './listing.ts'
import type { ListingSummary } from './view-types.ts'

export const CURRENCY = 'MON'

// Scripts and styles only from this origin; no inline script, no framing.
const CSP = "default-src 'self'; img-src 'self' data:; script-src 'self'; style-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

const SLUG = /^[a-z0-9-]{1,120}$/

export const marketPages = (ctx: MarketContext): FastifyPluginAsync => async (app) => {
  await app.register(assetRoutes)

  const send = (reply: FastifyReply, status: number, s: Omit<Shell, 'displayName' | 'chainId'>): FastifyReply =>
    reply
      .status(status)
      .type('text/html; charset=utf-8')
      .header('content-security-policy', CSP)
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'same-origin')
      .header('cache-control', 'no-store')
      .send(page({ ...s, displayName: ctx.config.displayName, chainId: ctx.chainConfig.chainId }).value)

  const account = async (req: FastifyRequest): Promise<string | null> => {
    const s = await currentSession(req, ctx.session)
    return s ? getAddress(s.address) : null
  }

  const notFoundPage = (reply: FastifyReply, who: string | null, what: string): FastifyReply =>
    send(reply, 404, { title: 'Not found', account: who, nav: 'none', main: html`<h1>Not found</h1><p>${what}</p><p><a href="/marketplace">Browse all datasets</a></p>` })

  app.get('/', { schema: { hide: true } }, async (_req, reply) => reply.redirect('/marketplace'))

  app.get<{ Querystring: Record<string, unknown> }>('/marketplace', { schema: { hide: true } }, async (req, reply) => {
    const b = browseQuery(req.query)
    // The read API owns filtering and its messages; the page renders its answer.
    const res = await app.inject({ method: 'GET', url: `/api/marketplace/listings?${apiQuery(b)}` })
    const body = res.json() as { total?: number; listings?: ListingSummary[]; error?: string }
    const r: BrowseResult =
      res.statusCode === 200
        ? { ok: true, total: body.total ?? 0, listings: body.listings ?? [] }
        : { ok: false, error: body.error ?? `listing query failed (${res.statusCode})` }
    return send(reply, r.ok ? 200 : 400, { title: 'Datasets', account: await account(req), nav: 'browse', main: browseMain(b, r, CURRENCY) })
  })

  app.get<{ Params: { slug: string } }>('/marketplace/:slug', { schema: { hide: true } }, async (req, reply) => {
    const who = await account(req)
    const slug = req.params.slug
    const rec = SLUG.test(slug) ? await ctx.db.listings.get(slug) : undefined
    if (!rec) return notFoundPage(reply, who, `There is no listing "${slug.slice(0, 120)}".`)
    let access: Access = 'none'
    if (who) {
      const a = who.toLowerCase()
      if (a === rec.ownerWallet || a === rec.ownerAccount) access = 'owner'
      else if (await ctx.db.purchases.get(purchaseKey(rec.slug, a))) access = 'buyer'
    }
    const l = listingView(rec)
    return send(reply, 200, { title: l.title, account: who, nav: 'none', main: listingMain(l, access, who !== null, CURRENCY), scripts: ['listing.js'] })
  })

  app.get<{ Params: { agentId: string } }>('/agents/:agentId', { schema: { hide: true } }, async (req, reply) => {
    const who = await account(req)
    const id = req.params.agentId
    if (!/^(0|[1-9][0-9]{0,77})$/.test(id)) return notFoundPage(reply, who, `"${id.slice(0, 80)}" is not an agent id: agent ids are whole numbers like 0.`)
    // Sample listings are demo data, not the agent's operations.
    const recs = (await allValues(ctx.db.listings)).filter((l) => l.agentId === id && !l.sample)
    recs.sort((a, b) => b.createdAt - a.createdAt || a.slug.localeCompare(b.slug))
    const main = agentMain(id, dailyRows(recs, ctx.now()), recs.map(listingView), CURRENCY)
    return send(reply, 200, { title: `Agent ${id}`, account: who, nav: 'none', main })
  })

  app.get('/keys', { schema: { hide: true } }, async (req, reply) => {
    const who = await account(req)
    let keys: KeyRow[] = []
    let main: Html
    if (who) {
      const res = await app.inject({ method: 'GET', url: '/api/marketplace/keys', headers: { cookie: req.headers.cookie ?? '' } })
      if (res.statusCode === 200) keys = (res.json() as { keys: KeyRow[] }).keys
      main = keysMain(who, keys)
    } else main = keysMain(null, [])
    return send(reply, 200, { title: 'Machine keys', account: who, nav: 'keys', main, scripts: ['keys.js'] })
  })
}
