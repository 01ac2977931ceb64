// market/API.md, "POST /api/marketplace/listings/{slug}/purchase". The payment rules, pure, in the order a buyer would fix them.
// "Confirmed" = mined with a receipt (anvil and Monad finalise on inclusion); a transaction
// still in the mempool is not confirmed.
import type { Failure } from '../../errors/codes.ts'
import type { PaymentRead } from '../chain/market-chain.ts'

export type PaymentCheck = { ok: true } | Failure

export interface PaymentWant {
  txHash: string
  signer: string
  payout: string
  priceWei: bigint
  chainId: number
}

export function checkPayment(p: PaymentRead, w: PaymentWant): PaymentCheck {
  if (p.state === 'unreachable')
    return {
      ok: false,
      code: 'UNREACHABLE',
      error: `chain unreachable while reading the transaction: ${p.error}`,
    }
  if (p.state === 'unknown')
    return {
      ok: false,
      code: 'NOT_FOUND',
      error: `txHash: transaction ${w.txHash} not found on chain ${w.chainId}`,
    }
  if (p.state === 'pending')
    return {
      ok: false,
      code: 'CONFLICT',
      error: `txHash: transaction ${w.txHash} is not confirmed yet; retry once it is mined`,
    }
  if (p.chainId !== null && p.chainId !== w.chainId)
    return {
      ok: false,
      code: 'BAD_INPUT',
      error: `txHash: transaction is for chain ${p.chainId}, not ${w.chainId}`,
    }
  if (!p.success)
    return { ok: false, code: 'PAYMENT_NOT_ACCEPTED', error: `txHash: transaction ${w.txHash} reverted` }
  if (p.from.toLowerCase() !== w.signer.toLowerCase())
    return {
      ok: false,
      code: 'FORBIDDEN',
      error: `txHash: sent from ${p.from}, not from the signer ${w.signer}`,
    }
  if (p.to === null || p.to.toLowerCase() !== w.payout.toLowerCase())
    return {
      ok: false,
      code: 'PAYMENT_NOT_ACCEPTED',
      error: `txHash: pays ${p.to ?? 'a contract creation'}, not the listing's payout address ${w.payout}`,
    }
  if (p.value < w.priceWei)
    return {
      ok: false,
      code: 'PAYMENT_NOT_ACCEPTED',
      error: `txHash: value ${p.value} wei is below the price ${w.priceWei} wei`,
    }
  return { ok: true }
}
