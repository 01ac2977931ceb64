// Batched requests (chain/README.md: Batching): the device, delegated by EIP-7702 to the batch
// executor, sends many validationRequest calls in one transaction to itself, so the registry
// still sees the device (the agent's approved operator) as msg.sender of each. On a chain
// without the executor the same code sends one call per transaction straight to the registry
// (chain/call-route.ts), with the same sender, fees, replacement and saving.
//
// Exactly once, as with one transaction per line: the transaction is signed and SAVED with its
// lines (state `sending`, the send under its nonce) before it is broadcast, and so is every
// replacement; after a crash the saved send is driven again (chain/tx-sender.ts) until one of its
// attempts is mined or its nonce was taken by another transaction. One send is in flight at a
// time, so lines are requested in seq order.
import { type Address, type Hex, encodeFunctionData, size as hexSize } from 'viem'
import { validationRegistryAbi } from '../../chain/abi.generated.ts'
import type { CallFault, CallRoute } from '../../chain/call-route.ts'
import type { SvcPublicClient } from '../../chain/clients.ts'
import type { SavedTx, TxOutcome, TxSender } from '../../chain/tx-sender.ts'
import type { AttestRecord, SavedSend } from './record.ts'
import type { AttestStore } from './store.ts'

export interface BatchRequesterDeps {
  pub: SvcPublicClient
  store: AttestStore
  sender: TxSender
  /** The account's route to the registry: through the batch executor, or one call per transaction. */
  route: CallRoute
  attestor: Address
  agentId: bigint
  /** Most lines per transaction; the block gas limit may allow fewer. */
  maxLines: number
  /** Who holds a request hash on chain: ours, nobody, or a sentence naming the other holder. */
  rowIsOurs(rec: AttestRecord): Promise<'ours' | 'none' | string>
  warn(msg: string): void
}

export interface BatchResult {
  requested: number
  failed: number
  /** false: a send did not land (reverted, nonce taken); its lines are pending again, stop here. */
  clean: boolean
}

/** Share of the block gas limit one batch may use: leaves room for others in the block. */
const BLOCK_SHARE = 0.5

export function createBatchRequester(d: BatchRequesterDeps) {
  const route = d.route
  const maxLines = route.direct ? 1 : d.maxLines
  let size = maxLines
  /** Gas per line: estimated once, then measured on each receipt (the most seen). */
  let perLineGas: bigint | undefined

  const callOf = (rec: AttestRecord): Hex =>
    encodeFunctionData({
      abi: validationRegistryAbi,
      functionName: 'validationRequest',
      args: [d.attestor, d.agentId, rec.requestUri, rec.requestHash],
    })

  async function blockGasLimit(): Promise<bigint> {
    return (await d.pub.getBlock({ blockTag: 'latest' })).gasLimit
  }

  /**
   * The line at fault in a batch, and what its row says: ours after all (requested), someone
   * else's or none (failed, with the revert reason). `where` names the transaction when the
   * revert was mined rather than estimated.
   */
  async function blame(bad: AttestRecord, reason: string, where = ''): Promise<AttestRecord> {
    const owner = await d.rowIsOurs(bad)
    if (owner === 'ours') return { ...bad, state: 'requested' }
    const why = `validationRequest reverted${where}: ${reason}`
    const rec: AttestRecord = { ...bad, state: 'failed', error: owner === 'none' ? why : `${owner} (${why})` }
    d.warn(`line ${bad.seq + 1}: ${rec.error}`)
    return rec
  }

  /**
   * Why a mined batch reverted: the same calls run again (eth_call) on the state its block left,
   * where the batch itself changed nothing and whatever beat it is in place. The executor's
   * CallFailed names the call; undefined when the replay passes now, names no call, or cannot run.
   */
  async function replay(
    send: SavedSend,
    blockNumber: bigint,
  ): Promise<{ index: number; reason: string } | undefined> {
    try {
      await route.simulate(route.callsOf(send.data), BigInt(send.gas), blockNumber)
      return undefined
    } catch (err) {
      const f = route.fault(err)
      return f && f.code !== 'TOO_LARGE' && f.index !== undefined
        ? { index: f.index, reason: f.reason }
        : undefined
    }
  }

  /** Settles a send's lines from its outcome, and forgets the send, in one store batch. */
  async function settle(send: SavedSend, out: TxOutcome, known?: AttestRecord[]): Promise<BatchResult> {
    const recs = (known ?? (await Promise.all(send.seqs.map((s) => d.store.get(s))))).filter(
      (r): r is AttestRecord => r !== undefined && r.state === 'sending',
    )
    const hash = out.kind === 'mined' ? out.receipt.transactionHash : undefined
    if (out.kind === 'mined' && out.receipt.status === 'success') {
      await d.store.update(
        recs.map((r) => ({
          ...r,
          state: 'requested' as const,
          requestTx: { hash: hash!, nonce: send.nonce },
        })),
        { del: send.nonce },
      )
      return { requested: recs.length, failed: 0, clean: true }
    }
    // Reverted (someone took a hash after our estimate) or never mined: the lines go back to
    // pending, keeping requestTx as the mark that their rows must be read before a new request.
    // A mined revert is replayed to name the line at fault, which is settled here with its reason.
    const named = out.kind === 'mined' ? await replay(send, out.receipt.blockNumber) : undefined
    const badSeq = named ? send.seqs[named.index] : undefined
    const bad = recs.find((r) => r.seq === badSeq)
    d.warn(
      out.kind === 'mined'
        ? `request batch ${hash} (nonce ${send.nonce}, ${recs.length} lines) reverted${bad ? ` at line ${bad.seq + 1}` : ''}; its lines will be checked and sent again`
        : `nonce ${send.nonce} was used by another transaction; its ${recs.length} lines will be checked and sent again`,
    )
    const blamed = bad && named ? await blame(bad, named.reason, ` in batch ${hash}`) : undefined
    await d.store.update(
      recs.map((r) => (r.seq === blamed?.seq ? blamed : { ...r, state: 'pending' as const })),
      { del: send.nonce },
    )
    return {
      requested: blamed?.state === 'requested' ? 1 : 0,
      failed: blamed?.state === 'failed' ? 1 : 0,
      clean: false,
    }
  }

  /** Saved sends from before (a crash, a failed run) go first: they hold the lowest nonces. */
  async function resume(): Promise<BatchResult> {
    const total: BatchResult = { requested: 0, failed: 0, clean: true }
    for (const send of (await d.store.sends()).sort((a, b) => a.nonce - b.nonce)) {
      const out = await d.sender.drive({ ...send })
      const r = await settle(send, out)
      total.requested += r.requested
      total.failed += r.failed
      total.clean &&= r.clean
    }
    return total
  }

  type Estimate = { ok: true; gas: bigint } | CallFault

  /**
   * The batch's gas and whether it would revert. eth_estimateGas runs the batch a dozen times
   * (a binary search), so it is asked once, for the first batch; after that one eth_call (a
   * single run, with half a block of gas) tells whether it reverts and the gas per line measured
   * on the last receipts sizes the limit.
   */
  async function estimate(lines: AttestRecord[], gasCap: bigint): Promise<Estimate> {
    const calls = lines.map(callOf)
    try {
      // One call per transaction: its own estimate every time (Monad charges the gas limit).
      if (perLineGas === undefined || route.direct) {
        const gas = await route.estimateGas(calls)
        perLineGas = gas / BigInt(lines.length)
        return { ok: true, gas }
      }
      await route.simulate(calls, gasCap)
      return { ok: true, gas: (perLineGas * BigInt(lines.length) * 115n) / 100n + 40_000n }
    } catch (err) {
      const f = route.fault(err)
      if (!f) throw err // the RPC, not the batch
      return f
    }
  }

  /**
   * Requests `lines` (pending, in seq order) in as few transactions as the block allows. A batch
   * whose estimate reverts names the call at fault (CallFailed): that line is marked failed with
   * the reason (or requested, if the row is ours after all) and the rest go on. A revert that
   * names no call is split in halves until the line at fault is alone.
   */
  async function request(lines: AttestRecord[]): Promise<BatchResult> {
    const res: BatchResult = { requested: 0, failed: 0, clean: true }
    // Lines sent before (requestTx kept) may already be on chain: read their rows first.
    const settled: AttestRecord[] = []
    let todo: AttestRecord[] = []
    const owners = await Promise.all(lines.map((r) => (r.requestTx ? d.rowIsOurs(r) : 'none')))
    lines.forEach((r, i) => {
      const o = owners[i]!
      if (o === 'ours') settled.push({ ...r, state: 'requested' })
      else if (o === 'none') todo.push(r)
      else settled.push({ ...r, state: 'failed', error: o })
    })
    await d.store.update(settled)
    for (const r of settled) r.state === 'failed' ? res.failed++ : res.requested++

    const gasCap = BigInt(Math.floor(Number(await blockGasLimit()) * BLOCK_SHARE))
    let cut = Math.min(size, todo.length)
    while (todo.length > 0) {
      const chunk = todo.slice(0, cut)
      const est = await estimate(chunk, gasCap)
      if (!est.ok && est.code === 'TOO_LARGE' && chunk.length > 1) {
        size = Math.max(1, Math.floor(chunk.length / 2))
        cut = size
        continue
      }
      if (!est.ok) {
        // The call at fault named, or the only one: that line settles, the rest go on.
        const at =
          est.index !== undefined && chunk[est.index] ? est.index : chunk.length === 1 ? 0 : undefined
        if (at !== undefined) {
          const bad = chunk[at]!
          const rec = await blame(bad, est.reason)
          await d.store.update([rec])
          rec.state === 'failed' ? res.failed++ : res.requested++
          todo = todo.filter((r) => r.seq !== bad.seq)
          cut = Math.min(chunk.length > 1 ? cut : size, todo.length)
          continue
        }
        cut = Math.ceil(chunk.length / 2) // split to find the line at fault
        continue
      }
      if (est.gas > gasCap && chunk.length > 1) {
        size = Math.max(1, Math.floor(chunk.length / 2))
        cut = size
        continue
      }
      // Adapt to the block: next time, as many lines as fit in our share of it.
      const perLine = est.gas / BigInt(chunk.length)
      size = Math.max(1, Math.min(maxLines, Number(gasCap / (perLine + 1n))))

      const { extraGas, ...carrier } = await route.tx(chunk.map(callOf))
      const tx = await d.sender.prepare({ ...carrier, gas: (est.gas * 11n) / 10n + extraGas })
      const send: SavedSend = { ...tx, seqs: chunk.map((r) => r.seq) }
      // Lines and send saved together, before the broadcast; the sender saves each replacement.
      const sending = chunk.map((r) => ({
        ...r,
        state: 'sending' as const,
        requestTx: { hash: tx.attempts[0]!.hash, nonce: tx.nonce },
      }))
      await d.store.update(sending, { put: send })
      const out = await d.sender.drive(tx, { saved: true, fresh: true })
      if (tx.delegate && out.kind === 'mined') route.forget() // read the code again
      if (out.kind === 'mined') {
        const used = out.receipt.gasUsed / BigInt(chunk.length)
        // Out of gas (used nearly all of it): next time allow half as much again per line.
        if (out.receipt.status !== 'success' && out.receipt.gasUsed * 100n >= BigInt(tx.gas) * 95n)
          perLineGas = ((perLineGas ?? used) * 3n) / 2n
        else if (perLineGas === undefined || used > perLineGas) perLineGas = used
      }
      const r = await settle({ ...send, attempts: out.tx.attempts }, out, sending)
      res.requested += r.requested
      res.failed += r.failed
      if (!r.clean) {
        res.clean = false
        return res
      }
      todo = todo.slice(chunk.length)
      cut = Math.min(size, todo.length)
    }
    return res
  }

  /** The sender's `save`: a replacement attempt is saved under its send before it goes out. */
  async function saveTx(tx: SavedTx): Promise<void> {
    const had = (await d.store.sends()).find((s) => s.nonce === tx.nonce)
    if (!had) throw new Error(`no saved send under nonce ${tx.nonce}`)
    await d.store.update([], { put: { ...tx, seqs: had.seqs } })
  }

  /** Bytes of calldata a line adds: the bench reports it. */
  const bytesPerLine = (rec: AttestRecord) => hexSize(callOf(rec))

  return { resume, request, saveTx, bytesPerLine, currentSize: () => size }
}
