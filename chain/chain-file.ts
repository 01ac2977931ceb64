// The chain file (`<SVC_HOME>/chain.json`, or `svc chain dev --out FILE`): where the registries
// are and which agent this hub speaks for. The hub, the attestor and the market all read this
// one shape, for the dev chain and for Monad testnet alike.
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { type Address, isAddress, isHex } from 'viem'
import { CHAIN_ID } from './chain-id.ts'
import { type DevAccounts, ROLES } from './accounts.ts'

export interface ChainInfo {
  version: 1
  rpcUrl: string
  chainId: typeof CHAIN_ID
  identityRegistry: Address
  validationRegistry: Address
  /** Decimal string: agent ids are uint256 (ERC-8004) and JSON numbers cannot hold them all. */
  agentId: string
  /** The validator whose rows the market accepts (<ATTESTOR_ADDRESS>). */
  attestorAddress: Address
  /** Origin of the attestor service the hub's sync posts lines to (optional). */
  attestorUrl?: string
  /**
   * The EIP-7702 batch executor the device and the attestor delegate to (chain/README.md:
   * Batching). Absent: one transaction per line, as before batching.
   */
  batchExecutor?: Address
  /** Dev chains only: which anvil key plays which role. Absent for a real network. */
  accounts?: DevAccounts
}

export function chainFilePath(home: string): string {
  return join(home, 'chain.json')
}

export type ParseResult<T> = { ok: true; value: T } | { ok: false; error: string }

/** Checks a parsed chain file; every error names the field. */
export function parseChainInfo(raw: unknown): ParseResult<ChainInfo> {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    return { ok: false, error: 'chain file: expected a JSON object' }
  const o = raw as Record<string, unknown>
  if (o.version !== 1) return { ok: false, error: 'chain file: version must be 1' }
  if (typeof o.rpcUrl !== 'string' || !/^https?:\/\//.test(o.rpcUrl))
    return { ok: false, error: 'chain file: rpcUrl must be an http(s) URL' }
  if (o.chainId !== CHAIN_ID) return { ok: false, error: `chain file: chainId must be ${CHAIN_ID}` }
  for (const f of ['identityRegistry', 'validationRegistry', 'attestorAddress'] as const) {
    if (typeof o[f] !== 'string' || !isAddress(o[f] as string, { strict: false }))
      return { ok: false, error: `chain file: ${f} must be an address` }
  }
  if (typeof o.agentId !== 'string' || !/^(0|[1-9][0-9]{0,77})$/.test(o.agentId))
    return { ok: false, error: 'chain file: agentId must be a decimal string' }
  if (
    o.batchExecutor !== undefined &&
    (typeof o.batchExecutor !== 'string' || !isAddress(o.batchExecutor, { strict: false }))
  )
    return { ok: false, error: 'chain file: batchExecutor must be an address' }
  if (
    o.attestorUrl !== undefined &&
    (typeof o.attestorUrl !== 'string' || !/^https?:\/\//.test(o.attestorUrl))
  ) {
    return { ok: false, error: 'chain file: attestorUrl must be an http(s) URL' }
  }
  if (o.accounts !== undefined) {
    if (typeof o.accounts !== 'object' || o.accounts === null)
      return { ok: false, error: 'chain file: accounts must be an object' }
    const acc = o.accounts as Record<string, unknown>
    for (const role of ROLES) {
      const k = acc[role] as { address?: unknown; privateKey?: unknown } | undefined
      if (
        !k ||
        typeof k.address !== 'string' ||
        !isAddress(k.address, { strict: false }) ||
        typeof k.privateKey !== 'string' ||
        !isHex(k.privateKey) ||
        k.privateKey.length !== 66
      ) {
        return { ok: false, error: `chain file: accounts.${role} must be { address, privateKey }` }
      }
    }
  }
  return { ok: true, value: o as unknown as ChainInfo }
}

/** A damaged chain file is never replaced by a reader: it names this hub's agent on chain. */
const CHAIN_FILE_FIX =
  '; put it back from a backup, or write it again with `svc chain dev` (a dev chain) or `svc chain enrol` (a real network)'

export async function readChainFile(path: string): Promise<ParseResult<ChainInfo>> {
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (err) {
    return {
      ok: false,
      error: `chain file ${path}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'not found (run `svc chain dev`?)' : (err as Error).message}`,
    }
  }
  let raw: unknown
  try {
    raw = JSON.parse(text)
  } catch (err) {
    return { ok: false, error: `chain file ${path}: not JSON (${(err as Error).message})${CHAIN_FILE_FIX}` }
  }
  const r = parseChainInfo(raw)
  return r.ok
    ? r
    : { ok: false, error: r.error.replace(/^chain file/, `chain file ${path}`) + CHAIN_FILE_FIX }
}

/**
 * The file's text. Written by the hub's commands through their atomic writer (hub/files/README.md:
 * Small files), which chain/ cannot import; mode 0600, as a dev chain file holds (well-known)
 * private keys and a real one may too.
 */
export function formatChainFile(info: ChainInfo): string {
  return JSON.stringify(info, null, 2) + '\n'
}
