// Test helper: real validation-registry rows on the dev chain. The device (the agent's approved
// operator) sends validationRequest; the named validator sends validationResponse. Transactions
// go out as JSON-RPC batches and are mined many to a block, so thousands of rows take seconds.
import { type Address, type Hex, createPublicClient, encodeFunctionData, http, toHex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { validationRegistryAbi } from '../../chain/abi.generated.ts'
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

type Pub = ReturnType<typeof rpc>
const rpc = (dev: DevChain) =>
  createPublicClient({
    chain: svcChain(dev.rpcUrl),
    transport: http(dev.rpcUrl, { batch: { batchSize: 200 }, retryCount: 0, timeout: 120_000 }),
  })
const raw = (pub: Pub, method: string, params: unknown[]) =>
  pub.request({ method: method as never, params: params as never })

// The dev accounts are anvil's own unlocked accounts, so anvil signs (eth_sendTransaction):
// much faster than signing thousands of transactions in JavaScript.
async function sendAll(pub: Pub, rpcUrl: string, key: Hex, calls: Hex[], to: Address): Promise<Hex[]> {
  const from = privateKeyToAccount(key).address
  let nonce = await pub.getTransactionCount({ address: from, blockTag: 'pending' })
  const hashes: Hex[] = []
  // anvil's pool silently drops what it cannot hold: mine every 500 transactions.
  for (let i = 0; i < calls.length; i += 500) {
    const part = calls.slice(i, i + 500)
    // One JSON-RPC batch per chunk, sent in order, so nonces arrive without gaps.
    const sent: Hex[] = []
    for (let j = 0; j < part.length; j += 100) {
      const body = part.slice(j, j + 100).map((data, k) => ({
        jsonrpc: '2.0',
        id: k,
        method: 'eth_sendTransaction',
        params: [
          {
            from,
            to,
            data,
            gas: '0x61a80',
            nonce: toHex(nonce++),
            maxFeePerGas: '0x77359400',
            maxPriorityFeePerGas: '0x0',
          },
        ],
      }))
      const res = (await (
        await fetch(rpcUrl, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        })
      ).json()) as { id: number; result?: Hex; error?: { message: string } }[]
      res.sort((a, b) => a.id - b.id)
      for (const r of res) {
        if (!r.result) throw new Error(`eth_sendTransaction: ${r.error?.message ?? 'no result'}`)
        sent.push(r.result)
      }
    }
    await mineAll(pub, sent)
    hashes.push(...sent)
  }
  return hashes
}

/**
 * Mines everything pending into as few blocks as the gas limit allows. Mining one block per
 * transaction (automine) costs anvil ~10 ms each; thousands of rows would take minutes.
 */
async function mineAll(pub: Pub, hashes: Hex[]): Promise<void> {
  if (hashes.length === 0) return
  for (let i = 0; i < 1000; i++) {
    const status = (await raw(pub, 'txpool_status', [])) as { pending: Hex; queued: Hex }
    if (BigInt(status.pending) === 0n && BigInt(status.queued) === 0n) break
    // Full blocks raise the EIP-1559 base fee 12.5% each; held at 1 gwei so no transaction is priced out.
    await raw(pub, 'anvil_setNextBlockBaseFeePerGas', ['0x3b9aca00'])
    await raw(pub, 'evm_mine', [])
  }
  const last = await pub.getTransactionReceipt({ hash: hashes[hashes.length - 1]! })
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
  const pub = rpc(dev)
  await raw(pub, 'evm_setAutomine', [false])
  try {
    // Requests are sent by the device, the demo agent's approved operator.
    await sendAll(pub, dev.rpcUrl, dev.accounts.device.privateKey, requests, dev.validationRegistry)
    for (const [vkey, rs] of byValidator) {
      const calls = rs.map((r) =>
        encodeFunctionData({
          abi: validationRegistryAbi,
          functionName: 'validationResponse',
          args: [r.requestHash, r.response ?? 100, 'svc://test', r.paramsHash, r.tag ?? 'svc-action'],
        }),
      )
      await sendAll(pub, dev.rpcUrl, vkey, calls, dev.validationRegistry)
    }
  } finally {
    await raw(pub, 'evm_setAutomine', [true])
  }
}
