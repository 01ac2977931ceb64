// marketplace-api: States, "Agent key (active) → revoked when the key's wallet no longer holds
// the agent NFT", done as part of any key-issue call. One ownerOf read per distinct agent.
import type { MarketChain } from '../chain/market-chain.ts'
import { chainUnreachable } from '../http/errors.ts'
import { allValues, type MarketDb } from '../store/db.ts'
import type { KeyRecord } from '../store/records.ts'

/** Revokes the active keys of `agentIds` and of `account` whose wallet no longer owns their agent. */
export async function revokeStaleKeys(
  db: MarketDb,
  chain: MarketChain,
  account: string,
  agentIds: string[],
  now: number,
): Promise<KeyRecord[]> {
  const keys = (await allValues(db.keys)).filter(
    (k) =>
      k.revokedAt === null && (k.account === account || k.wallet === account || agentIds.includes(k.agentId)),
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
    await db.keys.put(k.id, r, { sync: true })
    revoked.push(r)
  }
  return revoked
}
