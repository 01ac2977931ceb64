// marketplace-api: States, "Agent key (active) → revoked when the key's wallet no longer holds
// the agent NFT", done as part of any key-issue call. One ownerOf read per distinct agent.
import type { MarketChain } from '../chain/market-chain.ts'
import { chainUnreachable } from '../http/errors.ts'
import type { MarketDb } from '../store/store.ts'
import type { KeyRecord } from '../store/records.ts'

/** Revokes `account`'s active keys (only those of `agentIds` when given) whose wallet no longer owns their agent. */
export async function revokeStaleKeys(
  db: MarketDb,
  chain: MarketChain,
  account: string,
  agentIds: string[],
  now: number,
): Promise<KeyRecord[]> {
  // The account's own keys (asked for or held as wallet), by index; `agentIds` narrows further.
  const keys = (await db.keysOf(account)).filter(
    (k) => k.revokedAt === null && (agentIds.length === 0 || agentIds.includes(k.agentId)),
  )
  const agents = [...new Set(keys.map((k) => k.agentId))]
  const owners = new Map<string, string | null>()
  await Promise.all(
    agents.map(async (a) => {
      const r = await chain.ownerOf(BigInt(a))
      if (!r.ok && r.kind === 'unreachable')
        throw chainUnreachable(`chain unreachable while reading ownerOf(${a}): ${r.error}`)
      owners.set(a, r.ok ? r.value.toLowerCase() : null)
    }),
  )
  const revoked: KeyRecord[] = []
  for (const k of keys) {
    const owner = owners.get(k.agentId) ?? null
    if (owner === k.wallet) continue
    const r: KeyRecord = {
      ...k,
      revokedAt: now,
      revokedReason:
        owner === null
          ? `agent ${k.agentId} no longer exists`
          : `wallet ${k.wallet} no longer holds agent ${k.agentId}`,
    }
    await db.keys.put(k.id, r)
    revoked.push(r)
  }
  return revoked
}
