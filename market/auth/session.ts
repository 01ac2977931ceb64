// The `svc_session` cookie: a random id, signed by @fastify/cookie, pointing at a session row in
// LevelDB. HttpOnly, SameSite=Lax, Path=/, Secure when the market is served over HTTPS.
import { randomBytes } from 'node:crypto'
import '@fastify/cookie'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { unauthorized } from '../http/errors.ts'
import type { MarketDb } from '../store/store.ts'
import type { SessionRecord } from '../store/records.ts'
import { assertSameOrigin } from './origin.ts'

export const SESSION_COOKIE = 'svc_session'

export interface SessionOptions {
  db: MarketDb
  sessionSeconds: number
  publicUrl: string | null
  now?: () => number
}

function isHttps(req: FastifyRequest, publicUrl: string | null): boolean {
  return publicUrl ? publicUrl.startsWith('https:') : req.protocol === 'https'
}

export async function startSession(
  req: FastifyRequest,
  reply: FastifyReply,
  address: string,
  o: SessionOptions,
): Promise<SessionRecord> {
  const now = (o.now ?? Date.now)()
  const rec: SessionRecord = {
    id: randomBytes(32).toString('base64url'),
    address: address.toLowerCase(),
    createdAt: now,
    expiresAt: now + o.sessionSeconds * 1000,
  }
  await o.db.sessions.put(rec.id, rec)
  reply.setCookie(SESSION_COOKIE, rec.id, {
    signed: true,
    httpOnly: true,
    sameSite: 'lax',
    secure: isHttps(req, o.publicUrl),
    path: '/',
    maxAge: o.sessionSeconds,
  })
  return rec
}

/** The session of this request, or null when there is none (no cookie, bad signature, expired). */
export async function currentSession(req: FastifyRequest, o: SessionOptions): Promise<SessionRecord | null> {
  const raw = req.cookies[SESSION_COOKIE]
  if (!raw) return null
  const un = req.unsignCookie(raw)
  if (!un.valid || !un.value) return null
  const rec = await o.db.sessions.get(un.value)
  if (!rec) return null
  if (rec.expiresAt <= (o.now ?? Date.now)()) {
    await o.db.sessions.del(un.value)
    return null
  }
  return rec
}

/**
 * The signed-in account (lowercase address) or 401. For anything but GET/HEAD the request must
 * also be same-origin (market/API.md, "Authentication", rule 5: cookie-authenticated writes are protected
 * against cross-site requests).
 */
export async function requireAccount(req: FastifyRequest, o: SessionOptions): Promise<string> {
  const s = await currentSession(req, o)
  if (!s) throw unauthorized('sign in first: no valid svc_session cookie')
  if (req.method !== 'GET' && req.method !== 'HEAD') assertSameOrigin(req, o.publicUrl)
  return s.address
}

export async function endSession(
  req: FastifyRequest,
  reply: FastifyReply,
  o: SessionOptions,
): Promise<boolean> {
  const s = await currentSession(req, o)
  if (s) await o.db.sessions.del(s.id)
  reply.clearCookie(SESSION_COOKIE, { path: '/' })
  return s !== null
}
