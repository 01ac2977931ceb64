// Sends one transaction until it is mined, over an RPC that may lie, drop, rate-limit and stall:
//   - fees from eth_feeHistory (chain/fees.ts), never above the configured cap;
//   - a transaction not mined within `stuckAfterMs` is replaced: same nonce, fees bumped past the
//     node's replacement rule; every attempt is handed to `save` BEFORE it is broadcast, so after
//     a crash the caller knows every hash that may be mined under that nonce;
//   - the newest attempt is re-broadcast every `rebroadcastMs` (a pool may drop it silently);
//   - "already known" / "nonce too low" mean it is out; "underpriced" means bump now;
//   - the answer is whichever attempt was mined, or `nonce-taken` when another transaction
//     (not one of ours) used the nonce.
// Retries of single RPC calls (429 with Retry-After, 5xx, timeouts) are viem's transport's
// (chain/clients.ts); an error that survives them ends drive() and the caller backs off.
import {
  type Address,
  BaseError,
  type Hex,
  type LocalAccount,
  type TransactionReceipt,
  TransactionReceiptNotFoundError,
  keccak256,
} from 'viem'
import { CHAIN_ID } from './chain-id.ts'
import type { SvcPublicClient } from './clients.ts'
import { DEFAULT_MIN_TIP, type FeeOffer, type Fees, bumpFees, feesFromHistory, gwei } from './fees.ts'

export interface TxAttempt {
  hash: Hex
  raw: Hex
  /** Decimal strings: JSON (the hub's store) has no bigint. */
  maxFeePerGas: string
  maxPriorityFeePerGas: string
  /** When it was signed (ms since epoch): the stuck clock starts here. */
  at: number
}

export interface SavedTx {
  nonce: number
  to: Address
  data: Hex
  gas: string
  /** EIP-7702: the executor this account delegates to in this same transaction. */
  delegate?: Address
  attempts: TxAttempt[]
}

export type TxOutcome =
  | { kind: 'mined'; receipt: TransactionReceipt; tx: SavedTx }
  | { kind: 'nonce-taken'; tx: SavedTx }

export type SenderState =
  | { kind: 'sending'; nonce: number }
  | { kind: 'stuck'; nonce: number; replaced: number; detail: string }
  | { kind: 'mined'; nonce: number }

export interface TxSenderOptions {
  pub: SvcPublicClient
  account: LocalAccount
  feeCapPerGas?: bigint
  minTip?: bigint
  /** Replace a transaction not mined this long after it was signed (default 60 s). */
  stuckAfterMs?: number
  /** How often receipts are looked for (default: the client's polling interval). */
  pollMs?: number
  /** Re-broadcast the newest attempt this often while waiting (default 2 s). */
  rebroadcastMs?: number
  /** Persist the transaction (all its attempts so far) before a new attempt is broadcast. */
  save?(tx: SavedTx): Promise<void>
  onState?(s: SenderState): void
  warn?(msg: string): void
  now?(): number
}

export interface TxSender {
  readonly address: Address
  /** What the chain asks now, capped. */
  fees(): Promise<FeeOffer>
  /** Signs a first attempt (nothing is saved or sent yet); `nonce` absent: the next mined one. */
  prepare(p: { to: Address; data: Hex; gas: bigint; nonce?: number; delegate?: Address }): Promise<SavedTx>
  /**
   * Saves (unless `saved`: the caller saved it as it stands), broadcasts, waits, replaces when
   * stuck, until one of its attempts or another transaction is mined under its nonce. `fresh`:
   * just prepared, never broadcast, so the first look for a receipt is after the broadcast.
   */
  drive(tx: SavedTx, opts?: { saved?: boolean; fresh?: boolean }): Promise<TxOutcome>
}

export class FeeError extends Error {}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const msgOf = (err: unknown) =>
  err instanceof BaseError ? `${err.shortMessage} ${err.details ?? ''}` : String(err)

export function createTxSender(o: TxSenderOptions): TxSender {
  const { pub, account } = o
  const now = o.now ?? Date.now
  const stuckAfterMs = o.stuckAfterMs ?? 60_000
  // The client's own polling interval: 50 ms on loopback, 500 ms elsewhere (chain/clients.ts).
  const pollMs = o.pollMs ?? Math.min(pub.pollingInterval, 500)
  const rebroadcastMs = o.rebroadcastMs ?? 2000

  // prepare() reuses an offer for a second (a burst of batches); a replacement always asks anew.
  let cached: { at: number; offer: FeeOffer } | undefined
  async function cachedFees(): Promise<FeeOffer> {
    if (!cached || now() - cached.at > 1000) cached = { at: now(), offer: await fees() }
    return cached.offer
  }

  async function fees(): Promise<FeeOffer> {
    const h = await pub.getFeeHistory({ blockCount: 5, rewardPercentiles: [50], blockTag: 'latest' })
    return feesFromHistory(h, {
      ...(o.feeCapPerGas !== undefined ? { capPerGas: o.feeCapPerGas } : {}),
      minTip: o.minTip ?? DEFAULT_MIN_TIP,
    })
  }

  async function sign(tx: Omit<SavedTx, 'attempts'>, f: Fees): Promise<TxAttempt> {
    const common = {
      chainId: CHAIN_ID,
      to: tx.to,
      data: tx.data,
      nonce: tx.nonce,
      gas: BigInt(tx.gas),
      maxFeePerGas: f.maxFeePerGas,
      maxPriorityFeePerGas: f.maxPriorityFeePerGas,
    }
    let raw: Hex
    if (tx.delegate) {
      if (!account.signAuthorization) throw new Error('this account cannot sign EIP-7702 authorizations')
      // Sent by the account itself, so the authorization takes the nonce after the transaction's.
      const auth = await account.signAuthorization({
        chainId: CHAIN_ID,
        address: tx.delegate,
        nonce: tx.nonce + 1,
      })
      raw = await account.signTransaction({ ...common, type: 'eip7702', authorizationList: [auth] })
    } else raw = await account.signTransaction({ ...common, type: 'eip1559' })
    return {
      hash: keccak256(raw),
      raw,
      maxFeePerGas: f.maxFeePerGas.toString(),
      maxPriorityFeePerGas: f.maxPriorityFeePerGas.toString(),
      at: now(),
    }
  }

  async function prepare(p: {
    to: Address
    data: Hex
    gas: bigint
    nonce?: number
    delegate?: Address
  }): Promise<SavedTx> {
    const offer = await cachedFees()
    if (!offer.ok) throw new FeeError(offer.error)
    const nonce = p.nonce ?? (await pub.getTransactionCount({ address: account.address, blockTag: 'latest' }))
    const base = {
      nonce,
      to: p.to,
      data: p.data,
      gas: p.gas.toString(),
      ...(p.delegate ? { delegate: p.delegate } : {}),
    }
    return { ...base, attempts: [await sign(base, offer.fees)] }
  }

  async function minedAttempt(tx: SavedTx): Promise<TransactionReceipt | undefined> {
    const rs = await Promise.all(
      tx.attempts.map((a) =>
        pub.getTransactionReceipt({ hash: a.hash }).catch((err: unknown) => {
          if (err instanceof TransactionReceiptNotFoundError) return undefined
          throw err
        }),
      ),
    )
    return rs.find((r) => r !== undefined)
  }

  /** 'out': in a pool or mined; 'bump': the node wants more (underpriced, below base fee). */
  async function broadcast(a: TxAttempt): Promise<'out' | 'bump'> {
    try {
      await pub.sendRawTransaction({ serializedTransaction: a.raw })
      return 'out'
    } catch (err) {
      const m = msgOf(err)
      if (/already known|known transaction|already imported|already exists|nonce too low/i.test(m))
        return 'out'
      if (/underpriced|less than (the )?block base fee|fee cap.*(too low|less than)|feecap/i.test(m))
        return 'bump'
      throw err
    }
  }

  async function replace(tx: SavedTx, why: string): Promise<boolean> {
    const prev = tx.attempts[tx.attempts.length - 1]!
    const offer = await fees()
    cached = { at: now(), offer }
    const bumped = offer.ok
      ? bumpFees(
          {
            maxFeePerGas: BigInt(prev.maxFeePerGas),
            maxPriorityFeePerGas: BigInt(prev.maxPriorityFeePerGas),
          },
          offer.fees,
          o.feeCapPerGas,
        )
      : offer
    if (!bumped.ok) {
      o.onState?.({ kind: 'stuck', nonce: tx.nonce, replaced: tx.attempts.length - 1, detail: bumped.error })
      prev.at = now() // wait another period before trying again
      return false
    }
    const { attempts: _a, ...base } = tx
    tx.attempts.push(await sign(base, bumped.fees))
    o.warn?.(
      `nonce ${tx.nonce}: ${why}; replaced (${tx.attempts.length - 1}×) at ${gwei(bumped.fees.maxFeePerGas)} gwei max, ${gwei(bumped.fees.maxPriorityFeePerGas)} gwei tip`,
    )
    o.onState?.({ kind: 'stuck', nonce: tx.nonce, replaced: tx.attempts.length - 1, detail: why })
    return true
  }

  async function drive(tx: SavedTx, opts: { saved?: boolean; fresh?: boolean } = {}): Promise<TxOutcome> {
    let savedAttempts = opts.saved ? tx.attempts.length : -1
    let fresh = opts.fresh === true
    o.onState?.({ kind: 'sending', nonce: tx.nonce })
    for (;;) {
      const r = fresh ? undefined : await minedAttempt(tx)
      if (r) {
        o.onState?.({ kind: 'mined', nonce: tx.nonce })
        return { kind: 'mined', receipt: r, tx }
      }
      const mined = fresh
        ? tx.nonce
        : await pub.getTransactionCount({ address: account.address, blockTag: 'latest' })
      fresh = false
      if (mined > tx.nonce) {
        const late = await minedAttempt(tx)
        if (late) return { kind: 'mined', receipt: late, tx }
        return { kind: 'nonce-taken', tx }
      }
      if (o.save && savedAttempts !== tx.attempts.length) {
        await o.save(tx)
        savedAttempts = tx.attempts.length
      }
      const newest = tx.attempts[tx.attempts.length - 1]!
      if ((await broadcast(newest)) === 'bump') {
        await replace(tx, 'the node asked for a higher fee')
        continue
      }
      const sentAt = now()
      // A chain that mines on arrival (anvil) has the receipt at once: look before sleeping.
      // Then soon, then less often: a local chain mines within milliseconds (one transaction per
      // line waits here once per line), a public one in seconds (no burst of receipt calls there).
      let found = await minedAttempt(tx)
      let wait = Math.max(1, Math.floor(pollMs / 8))
      while (!found && now() - sentAt < rebroadcastMs && now() - newest.at < stuckAfterMs) {
        await sleep(wait)
        wait = Math.min(wait * 2, pollMs)
        found = await minedAttempt(tx)
      }
      if (found) {
        o.onState?.({ kind: 'mined', nonce: tx.nonce })
        return { kind: 'mined', receipt: found, tx }
      }
      if (now() - newest.at >= stuckAfterMs)
        await replace(
          tx,
          `not mined within ${stuckAfterMs >= 1000 ? `${Math.round(stuckAfterMs / 1000)} s` : `${stuckAfterMs} ms`}`,
        )
    }
  }

  return { address: account.address, fees, prepare, drive }
}
