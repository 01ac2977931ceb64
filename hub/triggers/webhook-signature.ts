// Signed webhooks, GitHub's convention (so GitHub, Gitea and most senders work unchanged): the
// header `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw body, keyed by the secret>`.
// Pure: hashing only, no I/O. The comparison is constant-time, on buffers of equal length.
import { createHmac, timingSafeEqual } from 'node:crypto'

export const SIGNATURE_HEADER = 'x-hub-signature-256'

/** The header's value for `body`: what a sender computes (tests, `curl` recipes). */
export function signBody(secret: string | Buffer, body: string | Buffer): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`
}

/** Why `header` is not a valid signature of the exact bytes `body`, or null when it is. */
export function signatureError(
  secret: Buffer,
  body: Buffer,
  header: string | string[] | undefined,
): string | null {
  if (header === undefined || header === '')
    return 'missing X-Hub-Signature-256 header (sha256=<hex HMAC-SHA256 of the body>)'
  if (Array.isArray(header)) return 'more than one X-Hub-Signature-256 header'
  const m = /^sha256=([0-9a-fA-F]{64})$/.exec(header.trim())
  if (!m) return 'X-Hub-Signature-256 must be "sha256=" followed by 64 hex digits'
  const given = Buffer.from((m[1] as string).toLowerCase(), 'hex')
  const expected = createHmac('sha256', secret).update(body).digest()
  // Both are 32 bytes here, as timingSafeEqual requires; a mismatch says nothing about where.
  if (given.length !== expected.length || !timingSafeEqual(given, expected))
    return 'X-Hub-Signature-256 does not match the body'
  return null
}
