// Stale agent keys: a key stays `active` only while its wallet holds its agent NFT. Every
// `POST /api/marketplace/keys` revokes the stale keys among those it is allowed to see: the
// caller's own and those of the agent its challenge names (market/API.md, "Agent keys").
// The owner of each agent is read once per call, whatever the number of keys: the call's
// `OwnerReads` remembers each answer, and the key-issue check reads through it too.
import type { Address } from 'viem'
import type { ReadResult } from '../../chain/reads.ts'
import type { MarketChain } from '../chain/market-chain.ts'
import { chainUnreachable } from '../http/errors.ts'
import type { MarketDb } from '../store/store.ts'
import type { KeyRecord } from '../store/records.ts'

/** `ownerOf` for one call: each agent read at most once. */
export interface OwnerReads {
  ownerOf(agentId: string): Promise<ReadResult<Address>>
  /** How many agents were read on chain (what the call cost). */
  readonly reads: number
}

export function ownerReads(chain: MarketChain): OwnerReads {
  const seen = new Map<string, Promise<ReadResult<Address>>>()
  return {
    ownerOf(agentId) {
      let r = seen.get(agentId)
      if (!r) {
        r = chain.ownerOf(BigInt(agentId))
        seen.set(agentId, r)
      }
      return r
    },
    get reads() {
      return seen.size
    },
  }
}

/** Why a key whose wallet is not `owner` (lowercase, or null: no such agent) was revoked. */
export function staleReason(k: KeyRecord, owner: string | null): string {
  return owner === null
    ? `agent ${k.agentId} no longer exists`
    : `wallet ${k.wallet} no longer holds agent ${k.agentId}: it is held by ${owner}`
}

/**
 * Revokes the active keys among `keys` whose wallet no longer holds their agent, and returns
 * them. Throws 502 when the chain cannot be reached (nothing is revoked on a guess).
 */
export async function revokeStale(
  db: MarketDb,
  owners: OwnerReads,
  keys: KeyRecord[],
  now: number,
): Promise<KeyRecord[]> {
  const active = keys.filter((k) => k.revokedAt === null)
  const holder = new Map<string, string | null>()
  await Promise.all(
    [...new Set(active.map((k) => k.agentId))].map(async (a) => {
      const r = await owners.ownerOf(a)
      if (!r.ok && r.code === 'UNREACHABLE')
        throw chainUnreachable(`chain unreachable while reading ownerOf(${a}): ${r.error}`)
      holder.set(a, r.ok ? r.value.toLowerCase() : null)
    }),
  )
  const revoked: KeyRecord[] = []
  for (const k of active) {
    const owner = holder.get(k.agentId) ?? null
    if (owner === k.wallet) continue
    const r: KeyRecord = { ...k, revokedAt: now, revokedReason: staleReason(k, owner) }
    await db.keys.put(k.id, r)
    revoked.push(r)
  }
  return revoked
}
