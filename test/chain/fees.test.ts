// EIP-1559 offers from the fee history, the cap, and replacement bumps past the node's rule.
import t from 'tap'
import { bumpFees, feesFromHistory, gwei } from '../../chain/fees.ts'
import { retryAfterMs } from '../../chain/clients.ts'

const G = 1_000_000_000n

t.test('fees from the history: median tip, twice the next base fee plus tip', async (t) => {
  const r = feesFromHistory({
    baseFeePerGas: [10n * G, 11n * G, 12n * G],
    reward: [[1n * G], [3n * G], [2n * G]],
  })
  t.same(r, { ok: true, fees: { maxFeePerGas: 26n * G, maxPriorityFeePerGas: 2n * G }, capped: false })
  const idle = feesFromHistory({ baseFeePerGas: [7n], reward: [[0n]] })
  t.same(idle.ok && idle.fees.maxPriorityFeePerGas, 1_000_000n, 'an idle chain still gets the floor tip')
  t.same(feesFromHistory({ baseFeePerGas: [] }), {
    ok: false,
    code: 'UPSTREAM_FAILED',
    error: 'eth_feeHistory returned no base fee',
  })
})

t.test('the cap: never more, and a base fee above it is an error that names both', async (t) => {
  const r = feesFromHistory({ baseFeePerGas: [40n * G], reward: [[5n * G]] }, { capPerGas: 50n * G })
  t.same(r, { ok: true, fees: { maxFeePerGas: 50n * G, maxPriorityFeePerGas: 5n * G }, capped: true })
  const tight = feesFromHistory({ baseFeePerGas: [48n * G], reward: [[5n * G]] }, { capPerGas: 50n * G })
  t.same(tight.ok && tight.fees.maxPriorityFeePerGas, 2n * G, 'the tip shrinks to fit under the cap')
  t.same(feesFromHistory({ baseFeePerGas: [60n * G] }, { capPerGas: 50n * G }), {
    ok: false,
    code: 'CONFLICT',
    error: 'base fee 60 gwei is above the fee cap 50 gwei',
  })
})

t.test(
  'a replacement offers at least +10% on both fees (geth/anvil rule), or what the chain asks now',
  async (t) => {
    const prev = { maxFeePerGas: 20n * G, maxPriorityFeePerGas: 1n * G }
    const r = bumpFees(prev, { maxFeePerGas: 1n * G, maxPriorityFeePerGas: 1n })
    if (!r.ok) throw new Error(r.error)
    t.ok(r.fees.maxFeePerGas * 100n >= prev.maxFeePerGas * 110n, 'max fee +10% or more')
    t.ok(r.fees.maxPriorityFeePerGas * 100n >= prev.maxPriorityFeePerGas * 110n, 'tip +10% or more')
    // Rounding never lands on the line: 1 wei tip still grows.
    const tiny = bumpFees(
      { maxFeePerGas: 9n, maxPriorityFeePerGas: 1n },
      { maxFeePerGas: 0n, maxPriorityFeePerGas: 0n },
    )
    t.ok(tiny.ok && tiny.fees.maxPriorityFeePerGas * 100n >= 110n && tiny.fees.maxFeePerGas * 100n >= 990n)
    const jump = bumpFees(prev, { maxFeePerGas: 90n * G, maxPriorityFeePerGas: 2n * G })
    t.same(
      jump.ok && jump.fees,
      { maxFeePerGas: 90n * G, maxPriorityFeePerGas: 2n * G },
      'a base-fee jump: the fresh offer',
    )
    t.same(bumpFees(prev, prev, 21n * G), {
      ok: false,
      code: 'CONFLICT',
      error: 'a replacement needs 22.5 gwei per gas, above the fee cap 21 gwei',
    })
    t.equal(gwei(1_500_000n), '0.002')
  },
)

t.test('Retry-After: seconds or an HTTP date; absent or unreadable: 1 s', async (t) => {
  const now = Date.parse('2026-11-23T23:00:00Z')
  t.equal(retryAfterMs('3', now), 3000)
  t.equal(retryAfterMs('Mon, 23 Nov 2026 23:00:05 GMT', now), 5000)
  t.equal(retryAfterMs(null, now), 1000)
  t.equal(retryAfterMs('soon', now), 1000)
})
