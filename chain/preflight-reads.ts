// The real reads behind preflight (chain/preflight.ts), over a viem client. Every failure is a
// value: a revert (reason, or an official custom error by name) or no answer at all.
import { type Abi, type Address, parseAbi } from 'viem'
import { fail } from '../errors/codes.ts'
import { identityRegistryAbi, validationRegistryAbi } from './abi.generated.ts'
import { type SvcPublicClient, publicClientFor } from './clients.ts'
import { describeCallError, officialErrorsAbi } from './official-errors.ts'
import {
  ERC721_INTERFACE,
  type PreflightReads,
  type PreflightReport,
  type PreflightTarget,
  type Read,
  preflight,
} from './preflight.ts'

const versionAbi = parseAbi(['function getVersion() view returns (string)'])

async function read<T>(fn: () => Promise<T>): Promise<Read<T>> {
  try {
    return { ok: true, value: await fn() }
  } catch (err) {
    const d = describeCallError(err)
    return 'revert' in d
      ? { ok: false, code: 'CHAIN_REVERTED', error: d.revert, revert: d.revert }
      : fail('UNREACHABLE', d.unreachable)
  }
}

export function viemPreflightReads(pub: SvcPublicClient): PreflightReads {
  // The official errors in each ABI, so a revert decodes by name.
  const call = <T>(address: Address, abi: Abi, functionName: string, args: unknown[] = []) =>
    read(
      () =>
        pub.readContract({
          address,
          abi: [...abi, ...officialErrorsAbi],
          functionName,
          args,
        } as never) as Promise<T>,
    )
  return {
    chainId: () => read(() => pub.getChainId()),
    hasCode: (a) => read(async () => ((await pub.getCode({ address: a })) ?? '0x') !== '0x'),
    version: (a) => call<string>(a, versionAbi, 'getVersion'),
    validationStatus: (a, h) => call(a, validationRegistryAbi, 'getValidationStatus', [h]),
    identityOf: (a) => call<Address>(a, validationRegistryAbi, 'getIdentityRegistry'),
    supportsErc721: (a) => call<boolean>(a, identityRegistryAbi, 'supportsInterface', [ERC721_INTERFACE]),
    ownerOf: (a, id) => call<Address>(a, identityRegistryAbi, 'ownerOf', [id]),
    isApprovedForAll: (a, o, op) => call<boolean>(a, identityRegistryAbi, 'isApprovedForAll', [o, op]),
    getApproved: (a, id) => call<Address>(a, identityRegistryAbi, 'getApproved', [id]),
    balance: (a) => read(() => pub.getBalance({ address: a })),
    maxFeePerGas: () => read(async () => (await pub.estimateFeesPerGas()).maxFeePerGas),
  }
}

/** Preflight against a live RPC (a short timeout: a node that does not answer is a finding, not a hang). */
export function runPreflight(target: PreflightTarget, pub?: SvcPublicClient): Promise<PreflightReport> {
  return preflight(target, viemPreflightReads(pub ?? publicClientFor(target.rpcUrl, { timeout: 10_000 })))
}

/** The report's failures as one line (what sync and the attestor log and refuse with). */
export function preflightLine(r: PreflightReport): string {
  return `preflight failed: ${r.failures.join('; ')}`
}
