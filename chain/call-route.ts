// How an account's registry calls reach the chain: many per transaction through the EIP-7702
// batch executor (README.md: Batching), or one per transaction straight to the registry where
// the chain has no executor (a chain without EIP-7702). The device's requests
// (hub/attest/request-batch.ts) and the attestor's answers (market/attestor/response-batch.ts)
// take either route with the same sender (tx-sender.ts: fees, replacement, Retry-After), the
// same estimates and the same reading of a revert.
import {
  type Address,
  BaseError,
  ContractFunctionRevertedError,
  type Hex,
  decodeFunctionData,
  encodeFunctionData,
} from 'viem'
import { batchExecutorAbi, validationRegistryAbi } from './abi.generated.ts'
import type { SvcPublicClient } from './clients.ts'
import { reasonText, revertText } from './official-errors.ts'

/** A revert read: too big for the gas (no call's fault), the call at fault, or no call named. */
export type CallFault =
  /** Too big for the gas: no call's fault, a smaller batch may pass. */
  | { ok: false; code: 'TOO_LARGE'; index?: undefined; reason: string }
  /** A revert: `index` names the call at fault when the chain says which. */
  | { ok: false; code: 'CHAIN_REVERTED'; index?: number; reason: string }

export interface CallRoute {
  /** True: one call per transaction, to the registry itself. */
  readonly direct: boolean
  /** The transaction that carries `calls`; the first through the executor also delegates. */
  tx(calls: Hex[]): Promise<{ to: Address; data: Hex; delegate?: Address; extraGas: bigint }>
  /** eth_estimateGas of `calls` as one transaction. */
  estimateGas(calls: Hex[]): Promise<bigint>
  /** eth_call of `calls` (at a past block: why a mined one reverted); throws as viem does. */
  simulate(calls: Hex[], gas: bigint, blockNumber?: bigint): Promise<void>
  /** The calls a saved transaction's data carries. */
  callsOf(data: Hex): Hex[]
  /** What a revert from estimateGas or simulate says; undefined: not a revert (the RPC failed). */
  fault(err: unknown): CallFault | undefined
  /** A delegating transaction was mined: read the account's code again next time. */
  forget(): void
}

export function createCallRoute(o: {
  pub: SvcPublicClient
  account: Address
  registry: Address
  executor?: Address | undefined
}): CallRoute {
  const { pub, account, registry, executor } = o
  let delegated = false
  const designator = executor ? (`0xef0100${executor.slice(2)}` as Hex) : undefined

  /** Is the account's code the delegation designator (0xef0100 ‖ executor)? */
  async function isDelegated(): Promise<boolean> {
    if (delegated) return true
    const code = await pub.getCode({ address: account })
    delegated = code?.toLowerCase() === designator!.toLowerCase()
    return delegated
  }

  // The ABI and arguments viem runs and decodes reverts with: the registry's own function, or
  // the executor's execute (run as if delegated before the first send carries the authorization).
  async function contractCall(calls: Hex[]) {
    if (!executor) {
      const c = decodeFunctionData({ abi: validationRegistryAbi, data: calls[0]! })
      return {
        address: registry,
        abi: validationRegistryAbi,
        functionName: c.functionName,
        args: c.args,
        account,
      }
    }
    return {
      address: account,
      abi: batchExecutorAbi,
      functionName: 'execute',
      args: [registry, calls],
      account,
      ...((await isDelegated()) ? {} : { stateOverride: [{ address: account, code: designator! }] }),
    }
  }

  return {
    direct: !executor,
    async tx(calls) {
      if (!executor) return { to: registry, data: calls[0]!, extraGas: 0n }
      const first = !(await isDelegated())
      return {
        to: account,
        data: encodeFunctionData({ abi: batchExecutorAbi, functionName: 'execute', args: [registry, calls] }),
        extraGas: first ? 30_000n : 0n,
        ...(first ? { delegate: executor } : {}),
      }
    },
    async estimateGas(calls) {
      return pub.estimateContractGas((await contractCall(calls)) as never)
    },
    async simulate(calls, gas, blockNumber) {
      await pub.simulateContract({
        ...(await contractCall(calls)),
        gas,
        ...(blockNumber !== undefined ? { blockNumber } : {}),
      } as never)
    },
    callsOf(data) {
      if (!executor) return [data]
      const c = decodeFunctionData({ abi: batchExecutorAbi, data })
      return c.functionName === 'execute' ? [...c.args[1]] : []
    },
    fault(err) {
      if (!(err instanceof BaseError)) return undefined
      if (
        /out of gas|gas required exceeds|exceeds block gas limit/i.test(`${err.shortMessage} ${err.details}`)
      )
        return { ok: false, code: 'TOO_LARGE', reason: 'out of gas' }
      const rev = err.walk((e) => e instanceof ContractFunctionRevertedError)
      if (!(rev instanceof ContractFunctionRevertedError)) return undefined
      // Straight to the registry: the one call is the one at fault.
      if (!executor)
        return { ok: false, code: 'CHAIN_REVERTED', index: 0, reason: rev.reason ?? revertText(rev.raw) }
      if (rev.data?.errorName === 'CallFailed') {
        const [index, reason] = rev.data.args as readonly [bigint, Hex]
        // A call that failed with no data at all ran out of the gas the estimate allowed (the
        // 63/64 rule): the batch is too big, not that call at fault.
        if (reason === '0x') return { ok: false, code: 'TOO_LARGE', reason: 'out of gas' }
        return { ok: false, code: 'CHAIN_REVERTED', index: Number(index), reason: reasonText(reason) }
      }
      return { ok: false, code: 'CHAIN_REVERTED', reason: rev.reason ?? revertText(rev.raw) }
    },
    forget() {
      delegated = false
    },
  }
}
