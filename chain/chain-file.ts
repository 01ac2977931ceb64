// The chain file (`<SVC_HOME>/chain.json`, or `svc chain dev --out FILE`): where the registries
// are and which agent this hub speaks for. The hub, the attestor and the market all read this
// one shape, for the dev chain and for Monad testnet alike.
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { type Address, isAddress, isHex } from 'viem'
import { fail, type Result } from '../errors/codes.ts'
import { errorText } from '../errors/text.ts'
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

export type ParseResult<T> = Result<{ value: T }>

/** Checks a parsed chain file; every error names the field. */
export function parseChainInfo(raw: unknown): ParseResult<ChainInfo> {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    return fail('BAD_CONFIG', 'chain file: expected a JSON object')
  const o = raw as Record<string, unknown>
  if (o.version !== 1) return fail('BAD_CONFIG', 'chain file: version must be 1')
  if (typeof o.rpcUrl !== 'string' || !/^https?:\/\//.test(o.rpcUrl))
    return fail('BAD_CONFIG', 'chain file: rpcUrl must be an http(s) URL')
  if (o.chainId !== CHAIN_ID) return fail('BAD_CONFIG', `chain file: chainId must be ${CHAIN_ID}`)
  for (const f of ['identityRegistry', 'validationRegistry', 'attestorAddress'] as const) {
    if (typeof o[f] !== 'string' || !isAddress(o[f] as string, { strict: false }))
      return fail('BAD_CONFIG', `chain file: ${f} must be an address`)
  }
  if (typeof o.agentId !== 'string' || !/^(0|[1-9][0-9]{0,77})$/.test(o.agentId))
    return fail('BAD_CONFIG', 'chain file: agentId must be a decimal string')
  if (
    o.batchExecutor !== undefined &&
    (typeof o.batchExecutor !== 'string' || !isAddress(o.batchExecutor, { strict: false }))
  )
    return fail('BAD_CONFIG', 'chain file: batchExecutor must be an address')
  if (
    o.attestorUrl !== undefined &&
    (typeof o.attestorUrl !== 'string' || !/^https?:\/\//.test(o.attestorUrl))
  ) {
    return fail('BAD_CONFIG', 'chain file: attestorUrl must be an http(s) URL')
  }
  if (o.accounts !== undefined) {
    if (typeof o.accounts !== 'object' || o.accounts === null)
      return fail('BAD_CONFIG', 'chain file: accounts must be an object')
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
        return fail('BAD_CONFIG', `chain file: accounts.${role} must be { address, privateKey }`)
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
    return (err as NodeJS.ErrnoException).code === 'ENOENT'
      ? fail('NOT_FOUND', `chain file ${path}: not found (run \`svc chain dev\`?)`)
      : fail('IO_FAILED', `chain file ${path}: ${errorText(err)}`)
  }
  let raw: unknown
  try {
    raw = JSON.parse(text)
  } catch (err) {
    return fail('BAD_CONFIG', `chain file ${path}: not JSON (${errorText(err)})${CHAIN_FILE_FIX}`)
  }
  const r = parseChainInfo(raw)
  return r.ok ? r : { ...r, error: r.error.replace(/^chain file/, `chain file ${path}`) + CHAIN_FILE_FIX }
}

/**
 * The file's text. Written by the hub's commands through their atomic writer (hub/files/README.md:
 * Small files), which chain/ cannot import; mode 0600, as a dev chain file holds (well-known)
 * private keys and a real one may too.
 */
export function formatChainFile(info: ChainInfo): string {
  return JSON.stringify(info, null, 2) + '\n'
}
