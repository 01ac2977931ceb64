// Lines attested as a SOP step would attest them: through the chain_attest tool, one call each,
// `svc://<name>/<i>` with idempotency key `<name><i>`, so tests of sync start from real lines.
import { createChainAttestTool } from '../../tools/chain_attest.ts'

type Deps = Parameters<typeof createChainAttestTool>[0]

/** Attests `count` lines named `name` into `store`; throws on the first the tool refuses. */
export async function attestLines(
  store: Deps['store'],
  signer: Deps['signer'],
  count: number,
  name: string,
  action = 'a',
): Promise<void> {
  const tool = createChainAttestTool({ store, signer })
  const signal = new AbortController().signal
  for (let i = 0; i < count; i++) {
    const r = await tool.run(
      { action, request_uri: `svc://${name}/${i}`, params: { i } },
      { runId: name, sop: 's', step: 1, call: i, idempotencyKey: `${name}${i}`, signal },
    )
    if (!r.ok) throw new Error(`line ${i}: ${r.error}`)
  }
}
