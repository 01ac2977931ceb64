// What the attestor needs: where the chain is, which registries, its own key, and the base of
// the response URIs it writes on chain. Read from the chain file plus a key from a file or the
// environment (SVC_ATTESTOR_KEY), so the key never has to sit in the chain file on a real network.
import { readFile } from 'node:fs/promises'
import type { Address, Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import type { ChainInfo } from '../../chain/chain-file.ts'
import { parsePrivateKey } from '../../chain/private-key.ts'
import { type Result, fail } from '../../errors/codes.ts'
import { errorText } from '../../errors/text.ts'

export interface AttestorConfig {
  rpcUrl: string
  identityRegistry: Address
  validationRegistry: Address
  privateKey: Hex
  /** responseURI = `${uriBase}/responses/<requestHash>`. */
  uriBase: string
  /** The EIP-7702 batch executor (chain file): answers go many per transaction. Absent: one each. */
  batchExecutor?: Address
  /** Batched: never offer more than this per gas (gwei). */
  feeCapGwei?: number
  /** Batched: replace an answer transaction not mined this long after signing (default 60 s). */
  stuckAfterMs?: number
  rpcTimeoutMs?: number
  /** Where the batcher's warnings go (replacements, batches that did not land). */
  warn?(msg: string): void
}

export const DEFAULT_URI_BASE = 'svc://attestor'
export const KEY_ENV = 'SVC_ATTESTOR_KEY'

export type ConfigResult = Result<{ config: AttestorConfig }>

export interface AttestorConfigSources {
  /** A chain file, or the market's chain settings with the attestor address (accounts: dev keys). */
  chain: Pick<
    ChainInfo,
    'rpcUrl' | 'identityRegistry' | 'validationRegistry' | 'attestorAddress' | 'accounts' | 'batchExecutor'
  >
  keyFile?: string
  env?: NodeJS.ProcessEnv
  uriBase?: string
}

/** Key precedence: --key-file, then $SVC_ATTESTOR_KEY, then the dev chain's `attestor` account. */
export async function loadAttestorConfig(src: AttestorConfigSources): Promise<ConfigResult> {
  let key: Hex | undefined
  if (src.keyFile !== undefined) {
    let text: string
    try {
      text = await readFile(src.keyFile, 'utf8')
    } catch (err) {
      // The operator named the file (--key-file, [attestor] keyFile): missing is NOT_FOUND.
      const code = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'NOT_FOUND' : 'IO_FAILED'
      return fail(code, `attestor key file ${src.keyFile}: ${errorText(err)}`)
    }
    const r = parsePrivateKey(text, `attestor key file ${src.keyFile}`)
    if (!r.ok) return fail(r.code, r.error)
    key = r.key
  } else if (src.env?.[KEY_ENV]) {
    const r = parsePrivateKey(src.env[KEY_ENV] ?? '', `$${KEY_ENV}`)
    if (!r.ok) return fail(r.code, r.error)
    key = r.key
  } else if (src.chain.accounts) {
    key = src.chain.accounts.attestor.privateKey
  }
  if (key === undefined) return fail('BAD_CONFIG', `no attestor key: pass --key-file FILE or set $${KEY_ENV}`)
  const address = privateKeyToAccount(key).address
  if (address.toLowerCase() !== src.chain.attestorAddress.toLowerCase()) {
    return fail(
      'BAD_CONFIG',
      `the attestor key is for ${address}, but the chain file names the attestor ${src.chain.attestorAddress}`,
    )
  }
  return {
    ok: true,
    config: {
      rpcUrl: src.chain.rpcUrl,
      identityRegistry: src.chain.identityRegistry,
      validationRegistry: src.chain.validationRegistry,
      privateKey: key,
      uriBase: (src.uriBase ?? DEFAULT_URI_BASE).replace(/\/+$/, ''),
      ...(src.chain.batchExecutor ? { batchExecutor: src.chain.batchExecutor } : {}),
    },
  }
}
