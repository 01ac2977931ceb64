// Issues a device's market key the way a person does in the browser (market/API.md,
// "Authentication"): sign in with Ethereum (EIP-4361) as the agent's owner, ask for a `key`
// challenge, sign its message with the owner's wallet, post it. `svc start` uses this with the
// dev chain's owner key; the key is then stored exactly as `svc key set` stores it.
import type { Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { createSiweMessage } from 'viem/siwe'
import { CHAIN_ID } from '../../chain/chain-id.ts'
import { fail, type Result } from '../../errors/codes.ts'

/** A refusal is UPSTREAM_FAILED: the market answered, with something other than the next step. */
export type IssueResult = Result<{ key: string; id: string; prefix: string }>

async function json(res: Response): Promise<Record<string, unknown>> {
  try {
    return (await res.json()) as Record<string, unknown>
  } catch {
    return {}
  }
}

export async function issueMarketKey(
  market: string,
  ownerKey: Hex,
  agentId: string,
  fetchImpl: typeof fetch = fetch,
): Promise<IssueResult> {
  const owner = privateKeyToAccount(ownerKey)
  const at = (p: string): string => new URL(p, market).href
  const nonceRes = await fetchImpl(at('/api/auth/nonce'))
  const nonce = (await json(nonceRes)).nonce
  if (nonceRes.status !== 200 || typeof nonce !== 'string')
    return fail('UPSTREAM_FAILED', `sign-in nonce: market answered ${nonceRes.status}`)
  const message = createSiweMessage({
    domain: new URL(market).host,
    address: owner.address,
    chainId: CHAIN_ID,
    nonce,
    uri: new URL(market).origin,
    version: '1',
    statement: 'Issue a market key for this device',
  })
  const signIn = await fetchImpl(at('/api/auth/verify'), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ message, signature: await owner.signMessage({ message }) }),
  })
  if (signIn.status !== 200)
    return fail(
      'UPSTREAM_FAILED',
      `sign-in: market answered ${signIn.status}: ${String((await json(signIn)).error ?? '')}`,
    )
  const cookie = signIn.headers
    .getSetCookie()
    .find((c) => c.startsWith('svc_session='))
    ?.split(';')[0]
  if (!cookie) return fail('UPSTREAM_FAILED', 'sign-in: no svc_session cookie in the answer')
  const headers = { 'content-type': 'application/json', cookie }
  const ch = await fetchImpl(at('/api/marketplace/challenges'), {
    method: 'POST',
    headers,
    body: JSON.stringify({ kind: 'key', agentId, wallet: owner.address }),
  })
  const chBody = await json(ch)
  if (ch.status !== 201 || typeof chBody.message !== 'string')
    return fail(
      'UPSTREAM_FAILED',
      `key challenge: market answered ${ch.status}: ${String(chBody.error ?? '')}`,
    )
  const signature = await owner.signMessage({ message: chBody.message })
  const k = await fetchImpl(at('/api/marketplace/keys'), {
    method: 'POST',
    headers,
    body: JSON.stringify({ challengeId: chBody.id, signature }),
  })
  const kBody = await json(k)
  if (k.status !== 201 || typeof kBody.key !== 'string')
    return fail('UPSTREAM_FAILED', `key issue: market answered ${k.status}: ${String(kBody.error ?? '')}`)
  return { ok: true, key: kBody.key, id: String(kBody.id), prefix: String(kBody.prefix) }
}
