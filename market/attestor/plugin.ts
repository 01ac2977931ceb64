// The attestor as a Fastify plugin, so the market can mount it next to its own routes, and
// `svc attestor` can run it alone (server.ts). Routes (under the app's root):
//   GET  /api/attestor/info    → { address, chainId, validationRegistry }
//   POST /api/attestor/attest  → { results: [{ requestHash, ok, txHash?, already?, error? }] }
import type { FastifyInstance, FastifyPluginAsync } from 'fastify'
import { CHAIN_ID } from '../../chain/chain-id.ts'
import type { Address } from 'viem'
import {
  ATTEST_PATH,
  INFO_PATH,
  MAX_LINE_CHARS,
  itemAnswer,
  parseAttestRequest,
} from '../../records/attestor-request.ts'
import { CodedError } from '../../errors/codes.ts'
import type { Attestor } from './service.ts'

export interface AttestorPluginOptions {
  attestor: Attestor
  validationRegistry: Address
}

export const attestorPlugin: FastifyPluginAsync<AttestorPluginOptions> = async (
  app: FastifyInstance,
  opts,
) => {
  app.get(INFO_PATH, async () => ({
    address: opts.attestor.address,
    chainId: CHAIN_ID,
    validationRegistry: opts.validationRegistry,
  }))

  app.post(
    ATTEST_PATH,
    // 100 lines of up to 64 KiB each, plus signatures and hashes.
    { bodyLimit: 100 * (MAX_LINE_CHARS * 4 + 512) },
    async (req) => {
      const parsed = parseAttestRequest(req.body)
      if (!parsed.ok) throw new CodedError(parsed.code, parsed.error)
      const out = await opts.attestor.attest(parsed.value)
      if (!out.ok) throw new CodedError(out.code, out.error)
      return { results: out.results.map(itemAnswer) }
    },
  )
}
