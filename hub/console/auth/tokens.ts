// The console's secrets held in memory: sessions and one-time sign-in links. Only a SHA-256 of
// each token is kept (a heap dump or a debugger shows no usable token), compared by map lookup
// of the hash, so no token is compared byte by byte with attacker input.
import { createHash, randomBytes } from 'node:crypto'

const hash = (token: string): string => createHash('sha256').update(token).digest('base64url')
const newToken = (): string => randomBytes(32).toString('base64url')

export interface Session {
  csrf: string
  createdAt: number
  lastSeen: number
}

export interface SessionStore {
  /** A new session: its cookie value (returned once, never stored) and its CSRF token. */
  create(now: number): { id: string; session: Session }
  /** The live session for a cookie value, touched; null when unknown or expired. */
  get(id: string, now: number): Session | null
  delete(id: string): void
  size(): number
}

export interface SessionLimits {
  /** Ends a session not used for this long. */
  idleMs: number
  /** Ends any session this long after sign-in. */
  maxAgeMs: number
  /** The oldest session goes when more are open (a bound on memory, not a feature). */
  max: number
}

export const SESSION_LIMITS: SessionLimits = { idleMs: 12 * 3600_000, maxAgeMs: 7 * 24 * 3600_000, max: 64 }

export function createSessionStore(limits: SessionLimits = SESSION_LIMITS): SessionStore {
  const sessions = new Map<string, Session>()
  return {
    create(now) {
      if (sessions.size >= limits.max) sessions.delete(sessions.keys().next().value as string)
      const id = newToken()
      const session = { csrf: newToken(), createdAt: now, lastSeen: now }
      sessions.set(hash(id), session)
      return { id, session }
    },
    get(id, now) {
      const key = hash(id)
      const s = sessions.get(key)
      if (!s) return null
      if (now - s.lastSeen > limits.idleMs || now - s.createdAt > limits.maxAgeMs) {
        sessions.delete(key)
        return null
      }
      s.lastSeen = now
      return s
    },
    delete(id) {
      sessions.delete(hash(id))
    },
    size: () => sessions.size,
  }
}

export interface LoginLinks {
  /** A new one-time token, valid for `ttlMs`. */
  mint(now: number): string
  /** True once per minted token, before it expires; the token is gone afterwards either way. */
  consume(token: string, now: number): boolean
}

export const LINK_TTL_MS = 15 * 60_000

export function createLoginLinks(ttlMs = LINK_TTL_MS, max = 8): LoginLinks {
  const links = new Map<string, number>()
  return {
    mint(now) {
      for (const [k, exp] of links) if (exp <= now) links.delete(k)
      if (links.size >= max) links.delete(links.keys().next().value as string)
      const token = newToken()
      links.set(hash(token), now + ttlMs)
      return token
    },
    consume(token, now) {
      const key = hash(token)
      const exp = links.get(key)
      links.delete(key)
      return exp !== undefined && exp > now
    },
  }
}
