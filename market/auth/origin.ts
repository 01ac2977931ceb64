// Cross-site request protection for cookie-authenticated writes. The cookie is SameSite=Lax
// (browsers do not send it on cross-site POSTs); on top of that a write is refused when the
// browser says it came from elsewhere: `Sec-Fetch-Site: cross-site|same-site`, or an `Origin`
// other than the market's own. Clients that send neither header (curl, the CLI) are not browsers
// and cannot be driven by another site, so they pass.
import type { FastifyRequest } from 'fastify'
import { forbidden } from '../http/errors.ts'

/** The market's own origin: `publicUrl` when configured, else what the request was sent to. */
export function ownOrigin(req: FastifyRequest, publicUrl: string | null): string {
  return publicUrl ?? `${req.protocol}://${req.host}`
}

export function assertSameOrigin(req: FastifyRequest, publicUrl: string | null): void {
  const site = req.headers['sec-fetch-site']
  if (site === 'cross-site' || site === 'same-site')
    throw forbidden(`cross-site request refused (Sec-Fetch-Site: ${site})`)
  const origin = req.headers.origin
  if (origin !== undefined && origin !== ownOrigin(req, publicUrl))
    throw forbidden(`cross-site request refused (Origin ${origin} is not ${ownOrigin(req, publicUrl)})`)
}
