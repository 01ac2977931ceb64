// The attestor's answers, many per transaction (chain/README.md: Batching): the attestor's
// account, delegated by EIP-7702 to the batch executor, calls validationResponse for each queued
// answer in one transaction to itself, so the registry still sees the validator as msg.sender.
// On a chain without the executor the same queue sends one answer per transaction straight to
// the registry (chain/call-route.ts), with the same sender, fees and replacement.
// Answers queue while a transaction is out and leave together in the next one, whatever HTTP
// request brought them. One transaction in flight at a time, its nonce the next mined one: an
// attestor restarted while its last transaction waits in a pool replaces it rather than adding
// a second answer beside it.
import { type Hex, encodeFunctionData } from 'viem'
import { validationRegistryAbi } from '../../chain/abi.generated.ts'
import type { CallFault, CallRoute } from '../../chain/call-route.ts'
import type { SvcPublicClient } from '../../chain/clients.ts'
import type { TxSender } from '../../chain/tx-sender.ts'
import { type Failure, fail } from '../../errors/codes.ts'

export interface ResponseCall {
  requestHash: Hex
  response: number
  uri: string
  paramsHash: Hex
  tag: string
}

/** `retry`: the transaction did not land (reverted, nonce taken): read the row and decide again. */
export type ResponseOutcome = { ok: true; txHash: Hex } | Failure<'CHAIN_REVERTED'> | { retry: true }

export interface ResponseBatcherDeps {
  pub: SvcPublicClient
  sender: TxSender
  /** Through the batch executor, or one answer per transaction. */
  route: CallRoute
  maxLines: number
  warn(msg: string): void
}

interface Queued {
  call: ResponseCall
  resolve(o: ResponseOutcome): void
  reject(e: unknown): void
}

const BLOCK_SHARE = 0.5

export function createResponseBatcher(d: ResponseBatcherDeps) {
  const route = d.route
  const queue: Queued[] = []
  let running = false
  const maxLines = route.direct ? 1 : d.maxLines
  let size = maxLines
  let perLineGas: bigint | undefined

  const data = (c: ResponseCall): Hex =>
    encodeFunctionData({
      abi: validationRegistryAbi,
      functionName: 'validationResponse',
      args: [c.requestHash, c.response, c.uri, c.paramsHash, c.tag],
    })

  /** As the device's batches (hub/attest/request-batch.ts): one estimate, then eth_call and measured gas. */
  async function estimate(items: Queued[], gasCap: bigint): Promise<{ ok: true; gas: bigint } | CallFault> {
    const calls = items.map((q) => data(q.call))
    try {
      if (perLineGas === undefined || route.direct) {
        const gas = await route.estimateGas(calls)
        perLineGas = gas / BigInt(items.length)
        return { ok: true, gas }
      }
      await route.simulate(calls, gasCap)
      return { ok: true, gas: (perLineGas * BigInt(items.length) * 115n) / 100n + 40_000n }
    } catch (err) {
      const f = route.fault(err)
      if (!f) throw err
      return f
    }
  }

  /** One transaction's worth from the head of the queue; settles every item it takes. */
  async function sendSome(): Promise<void> {
    const gasCap = BigInt(
      Math.floor(Number((await d.pub.getBlock({ blockTag: 'latest' })).gasLimit) * BLOCK_SHARE),
    )
    let items = queue.splice(0, Math.min(size, queue.length))
    for (;;) {
      if (items.length === 0) return
      const est = await estimate(items, gasCap)
      if (!est.ok && est.code === 'TOO_LARGE' && items.length > 1) {
        size = Math.max(1, Math.floor(items.length / 2))
        queue.unshift(...items.slice(size))
        items = items.slice(0, size)
        continue
      }
      if (!est.ok) {
        const at =
          est.index !== undefined && items[est.index] ? est.index : items.length === 1 ? 0 : undefined
        if (at === undefined) {
          // No call named: split, send the first half now, the rest back to the queue's head.
          const half = Math.ceil(items.length / 2)
          queue.unshift(...items.slice(half))
          items = items.slice(0, half)
          continue
        }
        items[at]!.resolve(fail('CHAIN_REVERTED', `validationResponse reverted: ${est.reason}`))
        items = items.filter((_, i) => i !== at)
        continue
      }
      if (est.gas > gasCap && items.length > 1) {
        size = Math.max(1, Math.floor(items.length / 2))
        queue.unshift(...items.slice(size))
        items = items.slice(0, size)
        continue
      }
      size = Math.max(1, Math.min(maxLines, Number(gasCap / (est.gas / BigInt(items.length) + 1n))))
      const { extraGas, ...carrier } = await route.tx(items.map((q) => data(q.call)))
      const tx = await d.sender.prepare({ ...carrier, gas: (est.gas * 11n) / 10n + extraGas })
      const out = await d.sender.drive(tx, { fresh: true })
      if (tx.delegate) route.forget() // read the code again
      if (out.kind === 'mined') {
        const used = out.receipt.gasUsed / BigInt(items.length)
        if (out.receipt.status !== 'success' && out.receipt.gasUsed * 100n >= BigInt(tx.gas) * 95n)
          perLineGas = ((perLineGas ?? used) * 3n) / 2n
        else if (perLineGas === undefined || used > perLineGas) perLineGas = used
      }
      if (out.kind === 'mined' && out.receipt.status === 'success') {
        for (const q of items) q.resolve({ ok: true, txHash: out.receipt.transactionHash })
      } else {
        d.warn(
          out.kind === 'mined'
            ? `response batch ${out.receipt.transactionHash} (${items.length} answers) reverted; each is checked again`
            : `nonce ${tx.nonce} was used by another transaction; ${items.length} answers are checked again`,
        )
        for (const q of items) q.resolve({ retry: true })
      }
      return
    }
  }

  async function pump(): Promise<void> {
    if (running) return
    running = true
    try {
      while (queue.length > 0) {
        const head = queue.slice(0, size)
        try {
          await sendSome()
        } catch (err) {
          // The chain is down past the transport's retries: these answers fail, later ones try again.
          for (const q of head) q.reject(err)
          for (const q of head) {
            const i = queue.indexOf(q)
            if (i >= 0) queue.splice(i, 1)
          }
        }
      }
    } finally {
      running = false
    }
  }

  return {
    submit(call: ResponseCall): Promise<ResponseOutcome> {
      return new Promise<ResponseOutcome>((resolve, reject) => {
        queue.push({ call, resolve, reject })
        // Let answers from the same request (and others arriving now) join this transaction.
        setImmediate(() => void pump())
      })
    },
  }
}
