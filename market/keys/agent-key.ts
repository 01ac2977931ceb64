// Agent bearer keys: `svc_` + 32 random bytes in base64url. Only the sha-256 is stored; the
// prefix (first 8 characters after `svc_`) lets a user tell keys apart in a list.
import { createHash, randomBytes } from 'node:crypto'

export const KEY_PREFIX = 'svc_'
const KEY_RE = /^svc_[A-Za-z0-9_-]{43}$/

export interface NewKey {
  key: string
  hash: string
  prefix: string
}

export function newAgentKey(): NewKey {
  const key = KEY_PREFIX + randomBytes(32).toString('base64url')
  return { key, hash: hashKey(key), prefix: key.slice(KEY_PREFIX.length, KEY_PREFIX.length + 8) }
}

export function hashKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex')
}

export function isKeyShaped(s: string): boolean {
  return KEY_RE.test(s)
}
