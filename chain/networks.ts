// Where a real network's registries are: the presets `--network NAME` names, and the custom
// network from `--rpc-url`, `--identity`, `--validation`. The addresses are what the ERC-8004
// project publishes; preflight checks them on the chain at run time, they are never trusted as
// given (chain/README.md, "A real network").
import { type Address, isAddress } from 'viem'
import { fail, type Result } from '../errors/codes.ts'

export interface NetworkPreset {
  name: string
  chainId: number
  rpcUrl: string
  identityRegistry: Address
  /**
   * Absent: the official repository lists no ValidationRegistry for the network (it is still
   * being revised); give `--validation`, or deploy svc's with `svc chain deploy-validation`.
   */
  validationRegistry?: Address
}

export const NETWORKS: Record<string, NetworkPreset> = {
  'monad-testnet': {
    name: 'monad-testnet',
    chainId: 10143,
    rpcUrl: 'https://testnet-rpc.monad.xyz',
    // erc-8004/erc-8004-contracts README, "Monad Testnet": IdentityRegistry.
    identityRegistry: '0x8004A818BFB912233c491871b3d84c89A494BD9e',
  },
}

export interface NetworkFlags {
  network?: string | undefined
  'rpc-url'?: string | undefined
  identity?: string | undefined
  validation?: string | undefined
}

export interface Network {
  rpcUrl: string
  identityRegistry: Address
  validationRegistry?: Address
  /** The preset's name, or "custom". */
  name: string
}

export type NetworkResult = Result<{ network: Network }>

/** A preset with any flag given overriding it, or a custom network from the flags alone. */
export function resolveNetwork(flags: NetworkFlags): NetworkResult {
  let base: Partial<Network> = { name: 'custom' }
  if (flags.network !== undefined) {
    const p = NETWORKS[flags.network]
    if (!p)
      return fail(
        'BAD_INPUT',
        `--network ${flags.network}: unknown (known: ${Object.keys(NETWORKS).join(', ')}; or give --rpc-url, --identity, --validation)`,
      )
    base = { ...p }
  }
  const rpcUrl = flags['rpc-url'] ?? base.rpcUrl
  if (rpcUrl === undefined) return fail('BAD_INPUT', 'no network: give --network NAME or --rpc-url URL')
  if (!/^https?:\/\/[^\s]+$/.test(rpcUrl)) return fail('BAD_INPUT', `--rpc-url ${rpcUrl}: not an http(s) URL`)
  const identity = flags.identity ?? base.identityRegistry
  if (identity === undefined) return fail('BAD_INPUT', 'no identity registry: give --identity ADDRESS')
  if (!isAddress(identity, { strict: false }))
    return fail('BAD_INPUT', `--identity ${identity}: not an address`)
  const validation = flags.validation ?? base.validationRegistry
  if (validation !== undefined && !isAddress(validation, { strict: false }))
    return fail('BAD_INPUT', `--validation ${validation}: not an address`)
  return {
    ok: true,
    network: {
      name: base.name ?? 'custom',
      rpcUrl,
      identityRegistry: identity as Address,
      ...(validation !== undefined ? { validationRegistry: validation as Address } : {}),
    },
  }
}
