// Cross-site request protection for cookie-authenticated writes. The cookie is SameSite=Lax
// (browsers do not send it on cross-site POSTs); on top of that a write is refused when the
// browser says it came from elsewhere: `Sec-Fetch-Site: cross-site|same-site`, or an `Origin`
// other than the market's own. Clients that send neither header (curl, the CLI) are not browsers
// and cannot be driven by another site, so they pass.
import type { AddressInfo } from 'node:net'
import type { FastifyRequest } from 'fastify'
import { forbidden } from '../http/errors.ts'

/**
 * The market's own origin (EIP-4361 domain and URI, CSRF origin): `publicUrl` when configured,
 * else the address the server listens on, read after listen so port 0 resolves. Never from the
 * request's Host or X-Forwarded-* headers: a sign-in message signed for another site would
 * otherwise be replayable here by sending that site's name as Host (EIP-4361 §Security:
 * domain binding). A market beyond loopback must set publicUrl (server.ts refuses otherwise).
 */
export function ownOrigin(req: FastifyRequest, publicUrl: string | null): string {
  return publicUrl ?? listenOrigin(req.server.server.address())
}

export function listenOrigin(a: AddressInfo | string | null): string {
  if (a === null || typeof a === 'string') return 'http://localhost'
  const host = a.family === 'IPv6' || a.address.includes(':') ? `[${a.address}]` : a.address
  return `http://${host}:${a.port}`
}

/** Loopback names and addresses: the only hosts where the listen address can be the SIWE domain. */

export function assertSameOrigin(req: FastifyRequest, publicUrl: string | null): void {
  const site = req.headers['sec-fetch-site']
  if (site === 'cross-site' || site === 'same-site')
    throw forbidden(`cross-site request refused (Sec-Fetch-Site: ${site})`)
  const origin = req.headers.origin
  if (origin !== undefined && origin !== ownOrigin(req, publicUrl))
    throw forbidden(`cross-site request refused (Origin ${origin} is not ${ownOrigin(req, publicUrl)})`)
}
