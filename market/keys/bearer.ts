// Device authentication: `Authorization: Bearer svc_…`, looked up by its sha-256, then the
// agent's ownership re-read on chain (market/API.md, "Authentication", rule 3).
import type { FastifyRequest } from 'fastify'
import type { MarketChain } from '../chain/market-chain.ts'
import { chainUnreachable, forbidden, unauthorized } from '../http/errors.ts'
import type { MarketDb } from '../store/store.ts'
import type { KeyRecord } from '../store/records.ts'
import { hashKey, isKeyShaped } from './agent-key.ts'

export async function requireAgentKey(
  req: FastifyRequest,
  db: MarketDb,
  chain: MarketChain,
): Promise<KeyRecord> {
  const h = req.headers.authorization
  if (!h) throw unauthorized('Authorization: send "Bearer svc_…" with an agent key')
  const m = /^Bearer\s+(\S+)$/i.exec(h)
  if (!m) throw unauthorized('Authorization: expected "Bearer svc_…"')
  const key = m[1]!
  if (!isKeyShaped(key))
    throw unauthorized('Authorization: not an agent key (svc_ followed by 43 base64url characters)')
  const id = await db.keyHashes.get(hashKey(key))
  const rec = id ? await db.keys.get(id) : undefined
  if (!rec) throw unauthorized('Authorization: unknown agent key')
  if (rec.revokedAt !== null)
    throw forbidden(`Authorization: key ${rec.prefix}… was revoked: ${rec.revokedReason ?? 'revoked'}`)
  const owner = await chain.ownerOf(BigInt(rec.agentId))
  if (!owner.ok && owner.code === 'UNREACHABLE')
    throw chainUnreachable(`chain unreachable while reading ownerOf(${rec.agentId}): ${owner.error}`)
  if (!owner.ok || owner.value.toLowerCase() !== rec.wallet)
    throw forbidden(
      `the key's wallet ${rec.wallet} no longer holds agent ${rec.agentId}; the key cannot list`,
    )
  return rec
}
