// Chain reads the market and the CLI use, as functions taking a client (viem style).
// Errors become values: `unknown` (the registry reverted "unknown": no such request) is told
// apart from `unreachable` (RPC down), so the market can answer 404-ish vs 502.
import { type Address, BaseError, ContractFunctionRevertedError, type Hex } from 'viem'
import type { Failure } from '../errors/codes.ts'
import type { ValidationRow } from '../records/verify-row.ts'
import { identityRegistryAbi, validationRegistryAbi } from './abi.generated.ts'
import type { SvcPublicClient } from './clients.ts'

/** Why a read failed: `kind` says it as the readers here always have, `code` as every result does. */
export type ReadFailure =
  | (Failure<'NOT_FOUND'> & { kind: 'unknown' })
  | (Failure<'CHAIN_REVERTED'> & { kind: 'reverted' })
  | (Failure<'UNREACHABLE'> & { kind: 'unreachable' })

export type ReadResult<T> = { ok: true; value: T } | ReadFailure

function revertReason(err: unknown): string | undefined {
  if (!(err instanceof BaseError)) return undefined
  const rev = err.walk((e) => e instanceof ContractFunctionRevertedError)
  if (rev instanceof ContractFunctionRevertedError) return rev.reason ?? rev.shortMessage
  return undefined
}

function asFailure(err: unknown): ReadFailure {
  const reason = revertReason(err)
  if (reason === 'unknown')
    return { ok: false, code: 'NOT_FOUND', kind: 'unknown', error: 'unknown request hash' }
  if (reason !== undefined) return { ok: false, code: 'CHAIN_REVERTED', kind: 'reverted', error: reason }
  return {
    ok: false,
    code: 'UNREACHABLE',
    kind: 'unreachable',
    error: err instanceof BaseError ? err.shortMessage : String(err),
  }
}

/** ERC-8004 getValidationStatus(bytes32) → (validator, agentId, response, responseHash, tag, lastUpdate). */
export async function readValidationStatus(
  client: SvcPublicClient,
  validationRegistry: Address,
  requestHash: Hex,
): Promise<ReadResult<ValidationRow>> {
  try {
    const [validator, agentId, response, responseHash, tag, lastUpdate] = await client.readContract({
      address: validationRegistry,
      abi: validationRegistryAbi,
      functionName: 'getValidationStatus',
      args: [requestHash],
    })
    return { ok: true, value: { validator, agentId, response, responseHash, tag, lastUpdate } }
  } catch (err) {
    return asFailure(err)
  }
}

/** ERC-721 ownerOf(agentId); a nonexistent agent is `reverted`. */
export async function readOwnerOf(
  client: SvcPublicClient,
  identityRegistry: Address,
  agentId: bigint,
): Promise<ReadResult<Address>> {
  try {
    const owner = await client.readContract({
      address: identityRegistry,
      abi: identityRegistryAbi,
      functionName: 'ownerOf',
      args: [agentId],
    })
    return { ok: true, value: owner }
  } catch (err) {
    return asFailure(err)
  }
}

/** ERC-8004 getAgentWallet(agentId): the agent's verified wallet (zero after a transfer). */
export async function readAgentWallet(
  client: SvcPublicClient,
  identityRegistry: Address,
  agentId: bigint,
): Promise<ReadResult<Address>> {
  try {
    const w = await client.readContract({
      address: identityRegistry,
      abi: identityRegistryAbi,
      functionName: 'getAgentWallet',
      args: [agentId],
    })
    return { ok: true, value: w }
  } catch (err) {
    return asFailure(err)
  }
}
