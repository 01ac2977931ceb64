// Sign-in for the console: the owner password (scrypt, <data_dir>/console-owner) or a one-time
// link the hub prints at start (`/login#token=…`: the token rides in the fragment, which no
// browser sends to a server, so it is in no request line, log or Referer; console.js posts it).
// Every state-changing request must come from this origin (Origin header, RFC 6454 §7) and, once
// signed in, carry the session's CSRF token: the synchronizer-token pattern.
import { timingSafeEqual } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { verifyPassword, PASSWORD_MAX_BYTES } from '../../broker/password.ts'
import { type Html, html } from '../../../web/html.ts'
import type { ErrorCode } from '../../../errors/codes.ts'
import type { ErrorLog } from '../../../errors/fastify.ts'
import type { FailureLimiter } from './failures.ts'
import { readOwnerFile } from './owner-file.ts'
import { type LoginLinks, type SessionStore, sessionKey } from './tokens.ts'

export const COOKIE = 'svc_console'

export interface AuthDeps {
  sessions: SessionStore
  links: LoginLinks
  limiter: FailureLimiter
  ownerFile: string
  /** Secure cookies (HTTPS console, or any bind beyond loopback). */
  secure: boolean
  now: () => number
  /** Told the session key of each sign-out (the event streams of that session end). */
  signedOut?(key: string): void
  /** Where a 5xx the routes answer themselves is logged (the hub's logger). */
  log?: ErrorLog
  /** Renders a signed-out page (the layout without navigation). */
  page(reply: FastifyReply, title: string, body: Html, status?: number): FastifyReply
}

/** `next=` only to a path on this console: never `//host` or a scheme (an open redirect). */
export function safeNext(v: unknown): string {
  return typeof v === 'string' && /^\/(?![/\\])[\x21-\x7e]*$/.test(v) && v.length <= 2000 ? v : '/'
}

/** Does the request come from a page of this console? The Origin must be exactly ours. */
export function sameOrigin(req: FastifyRequest, secure: boolean): boolean {
  const origin = req.headers.origin
  const host = req.headers.host
  if (typeof origin !== 'string' || typeof host !== 'string') return false
  return origin === `${secure ? 'https' : 'http'}://${host}`
}

function equalTokens(a: string, b: string): boolean {
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.length === y.length && timingSafeEqual(x, y)
}

function field(body: unknown, name: string): string | undefined {
  if (typeof body !== 'object' || body === null) return undefined
  const v = (body as Record<string, unknown>)[name]
  return typeof v === 'string' ? v : undefined
}

function cookieOptions(secure: boolean) {
  return { path: '/', httpOnly: true, sameSite: 'strict' as const, secure }
}

/** The session of a request, attached as req.consoleSession (null when signed out). */
export function sessionOf(req: FastifyRequest, deps: AuthDeps): ReturnType<SessionStore['get']> {
  const id = req.cookies?.[COOKIE]
  return typeof id === 'string' && id !== '' ? deps.sessions.get(id, deps.now()) : null
}

function loginForm(hasPassword: boolean, next: string, error: string | null): Html {
  return html`<section class="signin">
<h1>Sign in to the hub console</h1>
${error ? html`<p class="error" role="alert">${error}</p>` : ''}
<p id="link-status" class="muted" role="status" hidden></p>
${
  hasPassword
    ? html`<form method="post" action="/login" class="stack">
<input type="hidden" name="next" value="${next}">
<label>Owner password <input type="password" name="password" autocomplete="current-password" required autofocus></label>
<button type="submit">Sign in</button>
</form>
<p class="muted">Or open the one-time sign-in link that <code>svc hub</code> or <code>npm start</code> printed.</p>`
    : html`<p>No owner password is set on this hub. Open the one-time sign-in link that <code>svc hub</code> or <code>npm start</code> printed, or set a password with <code>svc hub console-password</code>.</p>`
}
</section>`
}

/** GET/POST /login, POST /login/link: the routes open to a signed-out browser. */
export function authRoutes(app: FastifyInstance, deps: AuthDeps): void {
  const retryAfter = (req: FastifyRequest): number | null => deps.limiter.blocked(req.ip, deps.now())
  const tooMany = (reply: FastifyReply, wait: number, json: boolean): FastifyReply => {
    reply.header('retry-after', String(wait))
    const text = `too many failed sign-ins from here: try again in ${wait} s`
    return json
      ? reply.status(429).send({ error: text, code: 'RATE_LIMITED' satisfies ErrorCode })
      : deps.page(reply, 'Sign in', html`<h1>Sign in</h1><p class="error" role="alert">${text}</p>`, 429)
  }
  const startSession = (reply: FastifyReply): void => {
    const { id } = deps.sessions.create(deps.now())
    reply.setCookie(COOKIE, id, cookieOptions(deps.secure))
  }

  app.get<{ Querystring: { next?: string } }>('/login', async (req, reply) => {
    const owner = await readOwnerFile(deps.ownerFile)
    if (sessionOf(req, deps)) return reply.redirect(safeNext(req.query.next), 303)
    return deps.page(
      reply,
      'Sign in',
      loginForm(owner.ok && owner.hash !== null, safeNext(req.query.next), owner.ok ? null : owner.error),
    )
  })

  app.post('/login', async (req, reply) => {
    if (!sameOrigin(req, deps.secure))
      return deps.page(
        reply,
        'Sign in',
        html`<h1>Sign in</h1><p class="error">refused: this form was not sent from this console (Origin header missing or foreign)</p>`,
        403,
      )
    const wait = retryAfter(req)
    if (wait !== null) return tooMany(reply, wait, false)
    const next = safeNext(field(req.body, 'next'))
    const password = field(req.body, 'password') ?? ''
    const owner = await readOwnerFile(deps.ownerFile)
    if (!owner.ok) {
      deps.log?.error(
        { err: new Error(owner.error), file: deps.ownerFile },
        'console: POST /login answered 500',
      )
      return deps.page(reply, 'Sign in', loginForm(false, next, owner.error), 500)
    }
    if (owner.hash === null)
      return deps.page(
        reply,
        'Sign in',
        loginForm(false, next, 'no owner password is set (svc hub console-password)'),
        400,
      )
    const bytes = Buffer.from(password, 'utf8')
    const right =
      bytes.length > 0 && bytes.length <= PASSWORD_MAX_BYTES && (await verifyPassword(bytes, owner.hash))
    if (!right) {
      deps.limiter.fail(req.ip, deps.now())
      return deps.page(reply, 'Sign in', loginForm(true, next, 'wrong password'), 401)
    }
    deps.limiter.succeed(req.ip)
    startSession(reply)
    return reply.redirect(next, 303)
  })

  app.post('/login/link', async (req, reply) => {
    if (!sameOrigin(req, deps.secure))
      return reply.status(403).send({
        error: 'refused: not sent from this console (Origin header missing or foreign)',
        code: 'FORBIDDEN' satisfies ErrorCode,
      })
    const wait = retryAfter(req)
    if (wait !== null) return tooMany(reply, wait, true)
    const token = field(req.body, 'token')
    if (token === undefined || token.length > 200)
      return reply.status(400).send({
        error: 'body: needs {"token": "<the token after #token= in the link>"}',
        code: 'BAD_INPUT' satisfies ErrorCode,
      })
    if (!deps.links.consume(token, deps.now())) {
      deps.limiter.fail(req.ip, deps.now())
      return reply.status(401).send({
        error:
          'this sign-in link was already used or has expired; restart the hub for a new one, or sign in with the owner password',
        code: 'UNAUTHORIZED' satisfies ErrorCode,
      })
    }
    startSession(reply)
    return reply.status(200).send({ ok: true })
  })
}

/**
 * The hooks of the signed-in scope: a request without a live session is sent to /login (a page)
 * or refused (anything else); a POST from another origin, or without the session's CSRF token
 * (form field `_csrf` or header `x-csrf-token`), is refused before its handler runs.
 */
export function requireSession(app: FastifyInstance, deps: AuthDeps): void {
  app.addHook('onRequest', async (req, reply) => {
    const s = sessionOf(req, deps)
    if (!s) {
      if (req.method === 'GET' && req.headers.accept?.includes('text/html'))
        return reply.redirect(`/login?next=${encodeURIComponent(req.url)}`, 303)
      return reply.status(401).send({
        error: 'not signed in to the console (open /login)',
        code: 'UNAUTHORIZED' satisfies ErrorCode,
      })
    }
    req.consoleSession = { csrf: s.csrf }
  })
  app.addHook('preHandler', async (req, reply) => {
    if (req.method === 'GET' || req.method === 'HEAD') return
    const s = req.consoleSession
    const token = field(req.body, '_csrf') ?? req.headers['x-csrf-token']
    if (!sameOrigin(req, deps.secure) || !s || typeof token !== 'string' || !equalTokens(token, s.csrf))
      return deps.page(
        reply,
        'Refused',
        html`<h1>Refused</h1><p class="error" role="alert">This request was not sent from a page of this console (its Origin or its form token does not match), so nothing was changed. Reload the page and try again.</p>`,
        403,
      )
  })
  app.post('/logout', async (req, reply) => {
    const id = req.cookies?.[COOKIE]
    if (typeof id === 'string') {
      deps.sessions.delete(id)
      deps.signedOut?.(sessionKey(id))
    }
    reply.clearCookie(COOKIE, cookieOptions(deps.secure))
    return reply.redirect('/login', 303)
  })
}
