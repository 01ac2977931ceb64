// EIP-1559 fees, pure: what to offer from the chain's fee history, and how much more a
// replacement must offer. No I/O here; chain/tx-sender.ts reads eth_feeHistory and applies them.
//
// Replacement rule: geth's txpool (and anvil's) accept a transaction with a used nonce only when
// both maxFeePerGas and maxPriorityFeePerGas are at least 10% higher (geth `PriceBump` 10).
// We offer 12.5% more, rounded up, so integer rounding can never land exactly on the line.
import { fail, type Result } from '../errors/codes.ts'

export interface Fees {
  maxFeePerGas: bigint
  maxPriorityFeePerGas: bigint
}

/** The part of eth_feeHistory that fees are drawn from (viem's FeeHistory has these fields). */
export interface FeeHistoryLike {
  /** One more entry than blocks: the last is the next block's base fee. */
  baseFeePerGas: readonly bigint[]
  /** Per block, the requested reward percentiles (we ask for one: the 50th). */
  reward?: readonly (readonly bigint[])[]
}

export interface FeePolicy {
  /** Never offer more than this per gas (the config's cap); undefined: no cap. */
  capPerGas?: bigint
  /** A floor for the tip: an idle chain reports rewards of 0, which some nodes refuse. */
  minTip?: bigint
}

/**
 * A refusal is the node's (UPSTREAM_FAILED: a fee history without a base fee) or the cap's
 * (CONFLICT: valid, but the chain asks more than the operator allows now).
 */
export type FeeOffer = Result<{ fees: Fees; capped: boolean }>

const BUMP_NUM = 1125n
const BUMP_DEN = 1000n
export const DEFAULT_MIN_TIP = 1_000_000n // 0.001 gwei

const ceilMul = (x: bigint) => (x * BUMP_NUM + BUMP_DEN - 1n) / BUMP_DEN
const median = (xs: bigint[]) => {
  if (xs.length === 0) return 0n
  const s = [...xs].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
  return s[Math.floor(s.length / 2)]!
}

/**
 * Tip: the median of the recent blocks' median rewards (at least minTip). Max fee: twice the next
 * block's base fee plus the tip, so six full blocks of +12.5% base fee still fit. Capped.
 */
export function feesFromHistory(h: FeeHistoryLike, policy: FeePolicy = {}): FeeOffer {
  const next = h.baseFeePerGas[h.baseFeePerGas.length - 1]
  if (next === undefined) return fail('UPSTREAM_FAILED', 'eth_feeHistory returned no base fee')
  const rewards = (h.reward ?? []).map((r) => r[0]).filter((x): x is bigint => x !== undefined)
  const tip = [median(rewards), policy.minTip ?? DEFAULT_MIN_TIP].reduce((a, b) => (a > b ? a : b))
  return capFees({ maxFeePerGas: 2n * next + tip, maxPriorityFeePerGas: tip }, next, policy.capPerGas)
}

/** Applies the cap; an offer below the next base fee cannot be mined, so it is an error. */
function capFees(f: Fees, nextBase: bigint, cap: bigint | undefined): FeeOffer {
  if (cap === undefined || f.maxFeePerGas <= cap) return { ok: true, fees: f, capped: false }
  if (cap < nextBase + 1n)
    return fail('CONFLICT', `base fee ${gwei(nextBase)} gwei is above the fee cap ${gwei(cap)} gwei`)
  const room = cap - nextBase
  let tip = f.maxPriorityFeePerGas
  if (room < tip) tip = room
  return { ok: true, fees: { maxFeePerGas: cap, maxPriorityFeePerGas: tip }, capped: true }
}

/**
 * The fees for a replacement of a transaction that offered `prev`: at least 12.5% more on both,
 * and at least what the chain asks now (`fresh`). An error when the cap forbids a valid bump.
 */
export function bumpFees(prev: Fees, fresh: Fees, capPerGas?: bigint): FeeOffer {
  const max = (a: bigint, b: bigint) => (a > b ? a : b)
  const tip = max(ceilMul(prev.maxPriorityFeePerGas), fresh.maxPriorityFeePerGas)
  const fee = max(max(ceilMul(prev.maxFeePerGas), fresh.maxFeePerGas), tip)
  if (capPerGas !== undefined && fee > capPerGas)
    return fail(
      'CONFLICT',
      `a replacement needs ${gwei(fee)} gwei per gas, above the fee cap ${gwei(capPerGas)} gwei`,
    )
  return { ok: true, fees: { maxFeePerGas: fee, maxPriorityFeePerGas: tip }, capped: false }
}

/** Wei per gas as gwei with up to 3 decimals, for messages. */
export function gwei(wei: bigint): string {
  const milli = (wei + 500_000n) / 1_000_000n
  const whole = milli / 1000n
  const frac = milli % 1000n
  return frac === 0n ? whole.toString() : `${whole}.${frac.toString().padStart(3, '0').replace(/0+$/, '')}`
}
