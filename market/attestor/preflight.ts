// The attestor's check before it starts answering (chain/preflight.ts): the chain is 10143, both
// registries have code and are ERC-8004 (v2.0.0, or svc's own), its key is the attestor address,
// and its balance covers the answers it will send (a warning otherwise).
import { privateKeyToAccount } from 'viem/accounts'
import { preflightLine, runPreflight } from '../../chain/preflight-reads.ts'
import { type Failure, fail } from '../../errors/codes.ts'
import type { AttestorConfig } from './config.ts'

export async function attestorPreflight(
  config: AttestorConfig,
): Promise<{ ok: true; warnings: string[] } | Failure<'BAD_CONFIG'>> {
  const key = privateKeyToAccount(config.privateKey).address
  const r = await runPreflight({
    rpcUrl: config.rpcUrl,
    identityRegistry: config.identityRegistry,
    validationRegistry: config.validationRegistry,
    attestorAddress: key,
    attestorKey: key,
  })
  if (r.ok) return { ok: true, warnings: r.warnings }
  // A chain that is down now may be up in a minute: start, and answer 502 until it is.
  if (r.unreachable && r.failures.length === 1)
    return { ok: true, warnings: [`attestor: chain not checked at start: ${r.failures[0]}`] }
  // Every failure left says the chain file's chain, registries or attestor address are not what
  // they must be (an RPC that stops answering ends the run, so it is at most the last failure).
  return fail('BAD_CONFIG', `attestor: ${preflightLine(r)}`)
}
