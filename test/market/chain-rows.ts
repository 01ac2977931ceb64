// Test helper: real validation-registry rows on the dev chain. The device (the agent's approved
// operator) sends validationRequest; the named validator sends validationResponse. Transactions
// are signed locally with explicit nonces and sent as JSON-RPC batches so thousands of rows take
// seconds, not minutes.
import { type Address, type Hex, createPublicClient, encodeFunctionData, http, parseGwei } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { validationRegistryAbi } from '../../chain/abi.ts'
import { svcChain } from '../../chain/clients.ts'
import type { DevChain } from '../../chain/dev.ts'

export interface RowSpec {
  requestHash: Hex
  paramsHash: Hex
  agentId?: bigint
  /** Private key of the validator named in the request and answering it (default: the attestor). */
  validatorKey?: Hex
  response?: number
  tag?: string
  /** false: request only, no response. */
  respond?: boolean
}

async function sendAll(dev: DevChain, key: Hex, calls: Hex[], to: Address): Promise<void> {
  if (calls.length === 0) return
  const pub = createPublicClient({ chain: svcChain(dev.rpcUrl), transport: http(dev.rpcUrl, { batch: { batchSize: 200 } }) })
  const account = privateKeyToAccount(key)
  let nonce = await pub.getTransactionCount({ address: account.address, blockTag: 'pending' })
  const hashes: Hex[] = []
  for (let i = 0; i < calls.length; i += 200) {
    const part = calls.slice(i, i + 200)
    const raws = await Promise.all(
      part.map((data) =>
        account.signTransaction({ chainId: dev.chainId, type: 'eip1559', to, data, nonce: nonce++, gas: 400_000n, maxFeePerGas: parseGwei('50'), maxPriorityFeePerGas: 1n }),
      ),
    )
    hashes.push(...(await Promise.all(raws.map((r) => pub.request({ method: 'eth_sendRawTransaction', params: [r] })))))
  }
  const last = await pub.waitForTransactionReceipt({ hash: hashes[hashes.length - 1]!, pollingInterval: 20 })
  if (last.status !== 'success') throw new Error('last row transaction reverted')
}

export async function writeRows(dev: DevChain, rows: RowSpec[]): Promise<void> {
  const agent = BigInt(dev.agentId)
  const byValidator = new Map<Hex, RowSpec[]>()
  const requests: Hex[] = rows.map((r) => {
    const vkey = r.validatorKey ?? dev.accounts.attestor.privateKey
    if (r.respond !== false) byValidator.set(vkey, [...(byValidator.get(vkey) ?? []), r])
    return encodeFunctionData({
      abi: validationRegistryAbi,
      functionName: 'validationRequest',
      args: [privateKeyToAccount(vkey).address, r.agentId ?? agent, 'svc://test', r.requestHash],
    })
  })
  // Requests are sent by the agent's owner (another agent id needs its own owner: see agentId rows in tests).
  await sendAll(dev, dev.accounts.device.privateKey, requests, dev.validationRegistry)
  for (const [vkey, rs] of byValidator) {
    const calls = rs.map((r) =>
      encodeFunctionData({
        abi: validationRegistryAbi,
        functionName: 'validationResponse',
        args: [r.requestHash, r.response ?? 100, 'svc://test', r.paramsHash, r.tag ?? 'svc-action'],
      }),
    )
    await sendAll(dev, vkey, calls, dev.validationRegistry)
  }
}
