// The market website: server-rendered pages over the same context as the API, plus
// small module scripts for the wallet steps. Mounted by buildMarketApp({ pages: marketPages }).
//   GET /                   → /marketplace
//   GET /marketplace        browse with filters and search (the read API's query, rendered)
//   GET /marketplace/:slug  one listing: verify, buy, download, the data preview
//   GET /agents/:agentId    one machine agent: owner, totals, operations over time, its listings
//   GET /keys               machine owners' agent keys (issue, revoke)
//   GET /purchases          the signed-in buyer's receipts
//   GET /licenses[/:kind]   the licence texts
//   GET /api/docs           the API reference, from /api/openapi.json
//   GET /guide/local-chain  buying on the dev chain (only when the market runs on one)
//   GET /assets/:name       the scripts, the stylesheet and the favicon
//   GET /auth/siwe-message  the EIP-4361 sign-in message for an address and a nonce, built here
//   GET /auth/unlock-message  the four Unlock lines for a listing and a payment, built here
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import { getAddress, isAddress } from 'viem'
import { createSiweMessage } from 'viem/siwe'
import { type ErrorCode, codeOfStatus, fail, statusOf } from '../../errors/codes.ts'
import { unlockMessage } from '../auth/messages.ts'
import { ownOrigin } from '../auth/origin.ts'
import { currentSession } from '../auth/session.ts'
import { badRequest, notFound } from '../http/errors.ts'
import { decodeCursor, encodeCursor } from '../store/browse-order.ts'
import type { MarketContext } from '../context.ts'
import { purchaseKey } from '../purchase/access.ts'
import { listingView } from '../listings/view.ts'
import { activity, agentMain } from './agent.ts'
import { type OpenApiDoc, apiDocsMain } from './api-docs.ts'
import { assetRoutes } from './assets.ts'
import { localChainMain } from './guide.ts'
import { LICENSE_TEXTS, isLicense, licenseMain, licensesIndex } from './licenses.ts'
import { purchasesMain } from './purchases.ts'
import { receiptsOf } from '../purchase/receipts.ts'
import { type BrowseResult, apiQuery, browseMain, browseQuery } from './browse.ts'
import { dailyRows } from './chart.ts'
import { type Html, html } from '../../web/html.ts'
import { type KeyRow, keysMain } from './keys.ts'
import { type Shell, page } from './layout.ts'
import { type Access, listingMain } from './listing.ts'
import type { ListingSummary } from './view-types.ts'

export const CURRENCY = 'MON'

// Scripts and styles only from this origin; no inline script, no framing.
const CSP =
  "default-src 'self'; img-src 'self' data:; script-src 'self'; style-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

const SLUG = /^[a-z0-9-]{1,120}$/
const AGENT_PAGE = 48

export const marketPages =
  (ctx: MarketContext): FastifyPluginAsync =>
  async (app) => {
    await app.register(assetRoutes)
    await app.register((await import('./enrol.ts')).enrolPage(ctx))

    const devBuyer = ctx.chainConfig.devBuyer
    const send = (
      reply: FastifyReply,
      status: number,
      s: Omit<Shell, 'displayName' | 'chainId'>,
    ): FastifyReply =>
      reply
        .status(status)
        .type('text/html; charset=utf-8')
        .header('content-security-policy', CSP)
        .header('x-content-type-options', 'nosniff')
        .header('referrer-policy', 'same-origin')
        .header('cache-control', 'no-store')
        .send(
          page({
            ...s,
            displayName: ctx.config.displayName,
            chainId: ctx.chainConfig.chainId,
            devChain: devBuyer !== undefined,
            url: ctx.config.publicUrl && reply.request.url ? ctx.config.publicUrl + reply.request.url : null,
          }).value,
        )

    const account = async (req: FastifyRequest): Promise<string | null> => {
      const s = await currentSession(req, ctx.session)
      return s ? getAddress(s.address) : null
    }

    const notFoundPage = (reply: FastifyReply, who: string | null, what: string): FastifyReply =>
      send(reply, 404, {
        title: 'Not found',
        account: who,
        nav: 'none',
        main: html`<h1>Not found</h1><p>${what}</p><p><a href="/marketplace">Browse all datasets</a></p>`,
      })

    // market/API.md, "Signed messages": signatures are built by the server byte for byte, so the sign-in message is made
    // here (EIP-55 address, this origin's host, the market's chain) and the page only signs it.
    app.get<{ Querystring: Record<string, unknown> }>(
      '/auth/siwe-message',
      { schema: { hide: true } },
      async (req, reply) => {
        const { address, nonce } = req.query
        if (typeof address !== 'string' || !isAddress(address, { strict: false }))
          throw badRequest('address: required, a 0x address of 40 hex digits')
        if (typeof nonce !== 'string' || !/^[a-zA-Z0-9]{8,96}$/.test(nonce))
          throw badRequest('nonce: required, the nonce from /api/auth/nonce (8 or more letters and digits)')
        const origin = new URL(ownOrigin(req, ctx.config.publicUrl))
        const message = createSiweMessage({
          domain: origin.host,
          address: getAddress(address),
          statement: `Sign in to the ${ctx.config.displayName} marketplace`,
          uri: origin.origin,
          version: '1',
          chainId: ctx.chainConfig.chainId,
          nonce,
          issuedAt: new Date(ctx.now()),
        })
        return reply.header('cache-control', 'no-store').send({ message })
      },
    )

    // market/API.md, "Signed messages": the four Unlock lines, from the same builder the purchase route checks with.
    app.get<{ Querystring: Record<string, unknown> }>(
      '/auth/unlock-message',
      { schema: { hide: true } },
      async (req, reply) => {
        const { slug, tx } = req.query
        if (typeof slug !== 'string' || !SLUG.test(slug)) throw badRequest('slug: required, a listing slug')
        if (typeof tx !== 'string' || !/^0x[0-9a-fA-F]{64}$/.test(tx))
          throw badRequest('tx: required, a 0x transaction hash of 64 hex digits')
        if (!(await ctx.db.listings.get(slug))) throw notFound(`listing ${slug} not found`)
        return reply
          .header('cache-control', 'no-store')
          .send({ message: unlockMessage(ctx.config.displayName, slug, tx.toLowerCase()) })
      },
    )

    app.get('/', { schema: { hide: true } }, async (_req, reply) => reply.redirect('/marketplace'))

    app.get<{ Querystring: Record<string, unknown> }>(
      '/marketplace',
      { schema: { hide: true } },
      async (req, reply) => {
        const b = browseQuery(req.query)
        // The read API owns filtering and its messages; the page renders its answer.
        const res = await app.inject({ method: 'GET', url: `/api/marketplace/listings?${apiQuery(b)}` })
        const body = res.json() as {
          total?: number
          listings?: ListingSummary[]
          next?: string | null
          prev?: string | null
          error?: string
          code?: ErrorCode
        }
        const r: BrowseResult =
          res.statusCode === 200
            ? {
                ok: true,
                total: body.total ?? 0,
                listings: body.listings ?? [],
                next: body.next ?? null,
                prev: body.prev ?? null,
              }
            : fail(
                body.code ?? codeOfStatus(res.statusCode) ?? 'INTERNAL',
                body.error ?? `listing query failed (${res.statusCode})`,
              )
        // The page answers with the status of the API's refusal: a bad filter 400, a fault 500.
        return send(reply, r.ok ? 200 : statusOf(r.code), {
          title: 'Datasets',
          account: await account(req),
          nav: 'browse',
          main: browseMain(b, r, CURRENCY, ctx.now()),
          scripts: ['browse.js'],
        })
      },
    )

    app.get<{ Params: { slug: string } }>(
      '/marketplace/:slug',
      { schema: { hide: true } },
      async (req, reply) => {
        const slug = req.params.slug
        const ok = SLUG.test(slug)
        // Read together: the page waits on the store, not on its own rendering (bench: website).
        const [who, rec, check] = await Promise.all([
          account(req),
          ok ? ctx.db.listings.get(slug) : undefined,
          ok ? ctx.db.verifications.get(slug) : undefined,
        ])
        if (!rec) return notFoundPage(reply, who, `There is no listing "${slug.slice(0, 120)}".`)
        let access: Access = 'none'
        if (who) {
          const a = who.toLowerCase()
          if (a === rec.ownerWallet || a === rec.ownerAccount) access = 'owner'
          else if (await ctx.db.purchases.get(purchaseKey(rec.slug, a))) access = 'buyer'
        }
        const l = listingView(rec, check)
        return send(reply, 200, {
          title: l.title,
          description: l.summary,
          account: who,
          nav: 'none',
          main: listingMain(l, access, who !== null, CURRENCY, rec.preview, ctx.now()),
          scripts: ['listing.js'],
        })
      },
    )

    app.get<{ Params: { agentId: string }; Querystring: { cursor?: string } }>(
      '/agents/:agentId',
      { schema: { hide: true } },
      async (req, reply) => {
        const who = await account(req)
        const id = req.params.agentId
        if (!/^(0|[1-9][0-9]{0,77})$/.test(id))
          return notFoundPage(
            reply,
            who,
            `"${id.slice(0, 80)}" is not an agent id: agent ids are whole numbers like 0.`,
          )
        // Sample listings are demo data, not the agent's operations.
        // From the store's agent index and counters, a page of listings at a time.
        const after = typeof req.query.cursor === 'string' ? decodeCursor(req.query.cursor) : null
        const [page, stats, owner] = await Promise.all([
          ctx.db.agentListings(id, AGENT_PAGE, after?.sort === 'newest' ? after : undefined),
          ctx.db.agentStats(id, ctx.now() - 31 * 86_400_000),
          ctx.chain.ownerOf(BigInt(id)),
        ])
        // Unknown: not registered on chain (a definite answer, not an unreachable chain) and
        // nothing listed here. An agent with listings keeps its page even if the chain forgot it.
        if (!owner.ok && owner.code !== 'UNREACHABLE' && stats.listings === 0)
          return notFoundPage(
            reply,
            who,
            `There is no agent ${id} on chain ${ctx.chainConfig.chainId}, and no listing from it.`,
          )
        const checks = await ctx.db.verifications.getMany(page.listings.map((l) => l.slug))
        const views = page.listings.map((l, i) => listingView(l, checks[i]))
        const more = page.next ? `/agents/${id}?cursor=${encodeCursor(page.next)}` : null
        const main = agentMain(
          { agentId: id, owner: owner.ok ? getAddress(owner.value) : null, ...activity(views, stats) },
          dailyRows(stats.recent, ctx.now()),
          views,
          CURRENCY,
          { ...stats, more },
          ctx.now(),
        )
        return send(reply, 200, {
          title: `Agent ${id}`,
          description: `Machine agent ${id}: ${stats.listings} listings of attested operation lines.`,
          account: who,
          nav: 'none',
          main,
        })
      },
    )

    app.get('/keys', { schema: { hide: true } }, async (req, reply) => {
      const who = await account(req)
      let keys: KeyRow[] = []
      let main: Html
      const origin = ownOrigin(req, ctx.config.publicUrl)
      if (who) {
        const res = await app.inject({
          method: 'GET',
          url: '/api/marketplace/keys',
          headers: { cookie: req.headers.cookie ?? '' },
        })
        if (res.statusCode === 200) keys = (res.json() as { keys: KeyRow[] }).keys
        main = keysMain(who, keys, origin, devBuyer !== undefined)
      } else main = keysMain(null, [], origin, devBuyer !== undefined)
      return send(reply, 200, {
        title: 'Machine keys',
        description: 'Machine owners issue and revoke the bearer keys their devices list datasets with.',
        account: who,
        nav: 'keys',
        main,
        scripts: ['keys.js'],
      })
    })

    app.get('/purchases', { schema: { hide: true } }, async (req, reply) => {
      const who = await account(req)
      return send(reply, 200, {
        title: 'My purchases',
        account: who,
        nav: 'purchases',
        main: purchasesMain(who, who ? await receiptsOf(ctx, who) : [], CURRENCY, ctx.config.explorerUrl),
      })
    })

    app.get('/licenses', { schema: { hide: true } }, async (req, reply) =>
      send(reply, 200, {
        title: 'Licences',
        account: await account(req),
        nav: 'none',
        main: licensesIndex(),
      }),
    )

    app.get<{ Params: { kind: string } }>(
      '/licenses/:kind',
      { schema: { hide: true } },
      async (req, reply) => {
        const who = await account(req)
        const kind = req.params.kind
        if (!isLicense(kind))
          return notFoundPage(
            reply,
            who,
            `There is no licence "${kind.slice(0, 40)}": see the list of licences.`,
          )
        return send(reply, 200, {
          title: LICENSE_TEXTS[kind].name,
          description: LICENSE_TEXTS[kind].short,
          account: who,
          nav: 'none',
          main: licenseMain(kind),
        })
      },
    )

    app.get('/api/docs', { schema: { hide: true } }, async (req, reply) => {
      const doc = (await app.inject({ method: 'GET', url: '/api/openapi.json' })).json() as OpenApiDoc
      return send(reply, 200, {
        title: 'API reference',
        description: 'Every route of the marketplace API, from its OpenAPI document.',
        account: await account(req),
        nav: 'api',
        main: apiDocsMain(doc),
      })
    })

    app.get('/guide/local-chain', { schema: { hide: true } }, async (req, reply) => {
      const who = await account(req)
      if (!devBuyer)
        return notFoundPage(
          reply,
          who,
          'This market runs on a real network: there is no local chain to buy on.',
        )
      return send(reply, 200, {
        title: 'Buy on the local chain',
        description:
          "The network, RPC URL, chain id and funded dev buyer account of this market's local chain.",
        account: who,
        nav: 'none',
        main: localChainMain({
          rpcUrl: ctx.chainConfig.rpcUrl,
          chainId: ctx.chainConfig.chainId,
          currency: CURRENCY,
          buyer: devBuyer,
        }),
      })
    })

    // Browsers ask for /favicon.ico before reading the page's <link rel="icon">.
    app.get('/favicon.ico', { schema: { hide: true } }, async (_req, reply) =>
      reply.redirect('/assets/favicon.svg', 301),
    )
  }
