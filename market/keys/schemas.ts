// The key routes' request bodies and the key as listed to its account (market/API.md,
// "POST /api/marketplace/keys" and "GET /api/marketplace/keys"). The secret and its hash never appear in a view.
import { Type, type Static } from 'typebox'
import { getAddress } from 'viem'
import { AddressString, AgentId, HexString } from '../http/schemas.ts'
import type { KeyRecord } from '../store/records.ts'

export const ChallengeBody = Type.Object(
  { kind: Type.Literal('key'), agentId: AgentId, wallet: AddressString },
  { additionalProperties: false },
)
export const KeyBody = Type.Object(
  { challengeId: Type.String({ minLength: 1, maxLength: 100 }), signature: HexString },
  { additionalProperties: false },
)
export const KeyView = Type.Object({
  id: Type.String(),
  agentId: Type.String(),
  prefix: Type.String(),
  wallet: Type.String(),
  device: Type.Union([Type.String(), Type.Null()]),
  createdAt: Type.String(),
  status: Type.Union([Type.Literal('active'), Type.Literal('revoked')]),
  revokedAt: Type.Union([Type.String(), Type.Null()]),
  revokedReason: Type.Union([Type.String(), Type.Null()]),
})

export function keyView(k: KeyRecord): Static<typeof KeyView> {
  return {
    id: k.id,
    agentId: k.agentId,
    prefix: k.prefix,
    wallet: getAddress(k.wallet),
    device: k.device,
    createdAt: new Date(k.createdAt).toISOString(),
    status: k.revokedAt === null ? 'active' : 'revoked',
    revokedAt: k.revokedAt === null ? null : new Date(k.revokedAt).toISOString(),
    revokedReason: k.revokedReason,
  }
}
