// The console's Fastify app: security headers on every answer, the sign-in routes open, every
// page (pages.ts) and the event stream behind sign-in, clear HTML pages for 404 and bad input.
// Composed here, listened on by index.ts; tests build it with their own parts.
import cookie from '@fastify/cookie'
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify'
import { statusOf } from '../../errors/codes.ts'
import { installJsonErrors } from '../../errors/fastify.ts'
import { type Html, html } from '../../web/html.ts'
import { assetRoutes } from './assets.ts'
import { type AuthDeps, authRoutes, COOKIE, requireSession, sessionOf } from './auth/routes.ts'
import { sessionKey } from './auth/tokens.ts'
import type { ConsoleContext, PageSpec } from './context.ts'
import { parseTopics } from './events.ts'
import { layout } from './layout.ts'
import { NAV, PAGES } from './pages.ts'

// Scripts, styles, images and connections only from this origin; no inline script or style, no
// framing, forms post only here (CSP Level 3).
export const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

const BODY_LIMIT = 256 * 1024

export interface ConsoleAppOptions {
  /** Everything of the context but `render`, which the app supplies. */
  ctx: Omit<ConsoleContext, 'render'>
  auth: Omit<AuthDeps, 'page'>
  https?: { cert: Buffer; key: Buffer }
}

function send(reply: FastifyReply, status: number, doc: Html): FastifyReply {
  return reply.status(status).type('text/html; charset=utf-8').send(doc.value)
}

export async function buildConsoleApp(
  o: ConsoleAppOptions,
): Promise<{ app: FastifyInstance; ctx: ConsoleContext }> {
  const app = Fastify({
    logger: false,
    bodyLimit: BODY_LIMIT,
    ...(o.https ? { https: o.https } : {}),
  }) as unknown as FastifyInstance
  await app.register(cookie)
  app.decorateRequest('consoleSession', null)

  // HTML forms post application/x-www-form-urlencoded (HTML §4.10.21.8); last value of a name wins.
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string', bodyLimit: BODY_LIMIT },
    (_req, body, done) => done(null, Object.fromEntries(new URLSearchParams(body as string))),
  )

  app.addHook('onSend', async (_req, reply, payload) => {
    reply.header('content-security-policy', CSP)
    reply.header('x-content-type-options', 'nosniff')
    // same-origin, not no-referrer: with no-referrer Chromium sends `Origin: null` on a form post (Fetch §3.2.5), and the Origin check would refuse every form.
    reply.header('referrer-policy', 'same-origin')
    reply.header('x-frame-options', 'DENY')
    if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store')
    return payload
  })

  const render = (req: FastifyRequest, reply: FastifyReply, p: PageSpec): FastifyReply =>
    send(reply, p.status ?? 200, layout({ ...p, navItems: NAV, csrf: req.consoleSession?.csrf ?? null }))
  const signedOut = (reply: FastifyReply, title: string, body: Html, status = 200): FastifyReply =>
    send(reply, status, layout({ title, nav: 'none', body, navItems: NAV, csrf: null }))
  const ctx: ConsoleContext = { ...o.ctx, render }
  const auth: AuthDeps = {
    ...o.auth,
    log: o.ctx.log,
    page: signedOut,
    signedOut: (key) => ctx.events.drop(key),
  }

  app.setNotFoundHandler((req, reply) => {
    const s = sessionOf(req, auth)
    if (s) req.consoleSession = { csrf: s.csrf }
    const body = html`<h1>Not found</h1><p>Nothing here at <code>${req.url.slice(0, 200)}</code>.</p><p><a href="/">Back to the overview</a></p>`
    return s
      ? render(req, reply, { title: 'Not found', nav: 'none', body, status: 404 })
      : signedOut(reply, 'Not found', body, 404)
  })
  // The one error path of every server, answered as a page: the 5xx logged with its error.
  installJsonErrors(app, o.ctx.log, {
    notFound: false,
    tooLarge: `the form is larger than ${BODY_LIMIT / 1024} KiB`,
    send: (reply, a) => {
      const text = a.status >= 500 ? 'the hub could not answer this request (see the hub log)' : a.error
      return signedOut(
        reply,
        'Error',
        html`<h1>Request refused</h1><p class="error" role="alert">${text}</p><p><a href="/">Back to the overview</a></p>`,
        a.status,
      )
    },
  })

  await assetRoutes(app)
  authRoutes(app, auth)
  await app.register(async (scope) => {
    requireSession(scope, auth)
    scope.get<{ Querystring: { topics?: string } }>('/events', async (req, reply) => {
      const topics = parseTopics(req.query.topics)
      if (!topics.ok)
        return reply.status(statusOf(topics.code)).send({ error: topics.error, code: topics.code })
      ctx.events.attach(req, reply, topics.topics, sessionKey(req.cookies[COOKIE] as string))
      return reply
    })
    for (const register of PAGES) await register(scope, ctx)
  })
  return { app, ctx }
}
