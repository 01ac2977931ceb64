// The sender on a real anvil whose mining the test controls: a transaction not mined in time is
// replaced at the same nonce with fees past the node's +10% rule; a cap that forbids the bump
// says so; a nonce taken by another transaction is reported; a 429's Retry-After is waited.
import t from 'tap'
import { parseEther } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { devAccounts } from '../../chain/accounts.ts'
import { startAnvil } from '../../chain/anvil.ts'
import { publicClientFor, walletClientFor } from '../../chain/clients.ts'
import { type SenderState, createTxSender } from '../../chain/tx-sender.ts'
import { startHostileRpc } from '../helpers/hostile-rpc.ts'

const anvil = await startAnvil()
t.teardown(() => anvil.stop())
const pub = publicClientFor(anvil.rpcUrl)
const acc = devAccounts()
const rpc = (method: string, params: unknown[] = []) =>
  fetch(anvil.rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  }).then((r) => r.json() as Promise<{ result?: unknown; error?: unknown }>)

t.test(
  'not mined in time: replaced at the same nonce, both fees +10% or more; the replacement is mined',
  async (t) => {
    await rpc('evm_setAutomine', [false])
    t.teardown(() => rpc('evm_setAutomine', [true]))
    const states: SenderState[] = []
    const account = privateKeyToAccount(acc.owner.privateKey)
    const sender = createTxSender({
      pub,
      account,
      stuckAfterMs: 300,
      pollMs: 20,
      onState: (s) => states.push(s),
    })
    const tx = await sender.prepare({ to: acc.deployer.address, data: '0x', gas: 21_000n })
    const driving = sender.drive(tx)
    // Mine only once a replacement is in the node's pool: an attempt is saved before it is sent,
    // so its being in `attempts` does not say the node has it.
    while (tx.attempts.length < 2) await new Promise((r) => setTimeout(r, 20))
    while ((await rpc('eth_getTransactionByHash', [tx.attempts[1]!.hash])).result == null)
      await new Promise((r) => setTimeout(r, 20))
    await rpc('evm_mine')
    const out = await driving
    t.equal(out.kind, 'mined')
    const [a, b] = tx.attempts
    t.ok(BigInt(b!.maxFeePerGas) * 100n >= BigInt(a!.maxFeePerGas) * 110n, 'max fee +10%')
    t.ok(BigInt(b!.maxPriorityFeePerGas) * 100n >= BigInt(a!.maxPriorityFeePerGas) * 110n, 'tip +10%')
    // Under load the sender may have replaced it again before the block: any replacement, never
    // the first transaction.
    const mined = out.kind === 'mined' ? out.receipt.transactionHash : null
    t.ok(
      tx.attempts.slice(1).some((x) => x.hash === mined),
      `a replacement was mined (attempt ${tx.attempts.findIndex((x) => x.hash === mined) + 1} of ${tx.attempts.length})`,
    )
    t.match(
      states.find((s) => s.kind === 'stuck'),
      { kind: 'stuck', nonce: tx.nonce, replaced: 1, detail: 'not mined within 300 ms' },
    )
    t.equal(await pub.getTransactionCount({ address: account.address }), tx.nonce + 1, 'one nonce used')
  },
)

t.test('a cap that forbids the bump: stuck, saying so, until the chain moves', async (t) => {
  await rpc('evm_setAutomine', [false])
  t.teardown(() => rpc('evm_setAutomine', [true]))
  const states: SenderState[] = []
  const account = privateKeyToAccount(acc.attestor.privateKey)
  const offer = await createTxSender({ pub, account }).fees()
  if (!offer.ok) throw new Error(offer.error)
  const sender = createTxSender({
    pub,
    account,
    stuckAfterMs: 200,
    pollMs: 20,
    feeCapPerGas: offer.fees.maxFeePerGas,
    onState: (s) => states.push(s),
  })
  const tx = await sender.prepare({ to: acc.deployer.address, data: '0x', gas: 21_000n })
  const driving = sender.drive(tx)
  while (!states.some((s) => s.kind === 'stuck')) await new Promise((r) => setTimeout(r, 20))
  t.match(
    states.find((s) => s.kind === 'stuck'),
    { replaced: 0, detail: /above the fee cap/ },
  )
  t.equal(tx.attempts.length, 1, 'no replacement over the cap')
  await rpc('evm_mine')
  t.equal((await driving).kind, 'mined')
})

t.test('a nonce taken by another transaction is reported, not waited on forever', async (t) => {
  const account = privateKeyToAccount(acc.device.privateKey)
  const sender = createTxSender({ pub, account, stuckAfterMs: 60_000, pollMs: 20 })
  const tx = await sender.prepare({ to: acc.deployer.address, data: '0x', gas: 21_000n })
  // The same key sends something else under that nonce first (another program, a wallet).
  const wallet = walletClientFor(anvil.rpcUrl, acc.device.privateKey)
  await pub.waitForTransactionReceipt({
    hash: await wallet.sendTransaction({ to: acc.owner.address, value: parseEther('0.01'), nonce: tx.nonce }),
  })
  const out = await sender.drive(tx)
  t.equal(out.kind, 'nonce-taken')
})

t.test("a 429's Retry-After is waited, then the call goes through; the wait is reported", async (t) => {
  const proxy = await startHostileRpc({ target: anvil.rpcUrl, seed: 1, rates: { '429': 1 }, retryAfterS: 1 })
  t.teardown(() => proxy.stop())
  const limited: number[] = []
  const client = publicClientFor(proxy.url, { retryCount: 3, onRateLimited: (u) => limited.push(u) })
  const t0 = Date.now()
  setTimeout(() => proxy.calm(), 200)
  const n = await client.getBlockNumber()
  t.ok(n >= 0n)
  t.equal(proxy.counts['429'], 1, 'one 429, then the retry waited past the calm')
  t.ok(Date.now() - t0 >= 900, 'waited the Retry-After second before retrying')
  t.equal(limited.length, 1)
  t.ok(limited[0]! >= t0 + 900, 'rate-limited until about a second later')
})

t.test('the hostile proxy repeats its schedule for a seed', async (t) => {
  const runs: Record<string, number>[] = []
  for (let i = 0; i < 2; i++) {
    const p = await startHostileRpc({
      target: anvil.rpcUrl,
      seed: 7,
      rates: { '5xx': 0.3, slow: 0.2 },
      slowMs: [1, 2],
    })
    const c = publicClientFor(p.url)
    for (let k = 0; k < 30; k++) await c.getChainId().catch(() => undefined)
    const { requests: _r, ...faults } = p.counts
    runs.push(faults)
    await p.stop()
  }
  t.same(runs[0], runs[1])
  t.ok(runs[0]!['5xx']! > 0, 'faults were injected')
})

t.test(
  "the hostile proxy's transaction faults follow the transactions, whatever reads come between",
  async (t) => {
    const faultsMet = async (readsBetween: number) => {
      const p = await startHostileRpc({
        target: anvil.rpcUrl,
        seed: 11,
        rates: { '5xx': 0.3, 'tx-dropped': 0.3, underpriced: 0.3 },
      })
      const call = (method: string, params: unknown[]) =>
        fetch(p.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
        }).then((r) => r.text())
      for (let k = 0; k < 20; k++) {
        for (let j = 0; j < readsBetween; j++) await call('eth_chainId', [])
        // Not a valid transaction: the node refuses it, but the proxy has drawn its fault first.
        await call('eth_sendRawTransaction', ['0x00'])
      }
      const met = { dropped: p.counts['tx-dropped'], underpriced: p.counts.underpriced }
      await p.stop()
      return met
    }
    const alone = await faultsMet(0)
    t.ok(alone.dropped > 0 && alone.underpriced > 0, 'both transaction faults were drawn')
    t.same(await faultsMet(3), alone, 'three reads before each transaction change nothing')
  },
)
