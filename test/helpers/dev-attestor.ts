// A local dev chain (anvil) with the attestor server on it, both stopped when the test ends: the
// start of every test of attestation against a real chain.
import type { Test } from 'tap'
import { type DevChain, startDevChain } from '../../chain/dev.ts'
import {
  type AttestorConfig,
  type AttestorConfigSources,
  loadAttestorConfig,
} from '../../market/attestor/config.ts'
import { type AttestorServer, startAttestorServer } from '../../market/attestor/server.ts'

export async function startDevAttestor(
  t: Pick<Test, 'teardown'>,
  opts: Omit<AttestorConfigSources, 'chain'> = {},
): Promise<{ chain: DevChain; attestor: AttestorServer; config: AttestorConfig }> {
  const chain = await startDevChain()
  t.teardown(() => chain.stop())
  const cfg = await loadAttestorConfig({ chain: chain.info, ...opts })
  if (!cfg.ok) throw new Error(cfg.error)
  const attestor = await startAttestorServer(cfg.config)
  t.teardown(() => attestor.close())
  return { chain, attestor, config: cfg.config }
}
