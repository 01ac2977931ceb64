// Sync to the chain: lines per second from a hub's attest store to attested rows on a local
// anvil (device requests + attestor answers, with every check both sides make), printed beside
// what the chain alone takes for the same two transactions per line, measured in the same
// process: pre-signed validationRequest and validationResponse transactions sent back to back,
// one RPC each, then every receipt. That is the physical limit here; no sync can beat it.
// Each side gets a fresh chain of its own: anvil slows down as its chain grows (measured here:
// 437 transfers/s at 1,000 blocks, 184/s at 5,000), so sharing one would favour whoever goes first.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type Hex, encodeFunctionData, keccak256, stringToHex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { validationRegistryAbi } from '../chain/abi.generated.ts'
import { CHAIN_ID } from '../chain/chain-id.ts'
import { type SvcPublicClient, publicClientFor } from '../chain/clients.ts'
import { type DevChain, startDevChain } from '../chain/dev.ts'
import { signerFromKey } from '../hub/attest/device-key.ts'
import { openAttestStore } from '../hub/attest/store.ts'
import { createAttestSync } from '../hub/attest/sync.ts'
import { loadAttestorConfig } from '../market/attestor/config.ts'
import { startAttestorServer } from '../market/attestor/server.ts'
import { ATTEST_RESPONSE, ATTEST_TAG } from '../records/verify-row.ts'
import { createChainAttestTool } from '../tools/chain_attest.ts'

const LINES = Number(process.env.BENCH_LINES ?? 1000)
const fmt = (n: number) => Math.round(n).toLocaleString('en-US')
const dir = await mkdtemp(join(tmpdir(), 'svc-bench-sync-'))
const stops: (() => Promise<unknown>)[] = [() => rm(dir, { recursive: true, force: true })]

async function freshChain(): Promise<{ chain: DevChain; pub: SvcPublicClient }> {
  const chain = await startDevChain()
  stops.unshift(() => chain.stop())
  return { chain, pub: publicClientFor(chain.rpcUrl) }
}

try {
  // Baseline: the same two writes per line, signed ahead of time, so only the chain works.
  const { chain, pub } = await freshChain()
  const device = privateKeyToAccount(chain.accounts.device.privateKey)
  const attestor = privateKeyToAccount(chain.accounts.attestor.privateKey)
  const fees = await pub.estimateFeesPerGas()
  const agentId = BigInt(chain.agentId)
  const hashes = Array.from({ length: LINES }, (_, i) => keccak256(stringToHex(`baseline ${i}`)))
  const sign = (account: typeof device, nonce: number, data: Hex) =>
    account.signTransaction({
      chainId: CHAIN_ID,
      type: 'eip1559',
      to: chain.validationRegistry,
      data,
      nonce,
      gas: 300_000n,
      maxFeePerGas: fees.maxFeePerGas,
      maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
    })
  const dn = await pub.getTransactionCount({ address: device.address })
  const an = await pub.getTransactionCount({ address: attestor.address })
  const requests = await Promise.all(
    hashes.map((h, i) =>
      sign(
        device,
        dn + i,
        encodeFunctionData({
          abi: validationRegistryAbi,
          functionName: 'validationRequest',
          args: [attestor.address, agentId, `svc://baseline/${i}`, h],
        }),
      ),
    ),
  )
  const responses = await Promise.all(
    hashes.map((h, i) =>
      sign(
        attestor,
        an + i,
        encodeFunctionData({
          abi: validationRegistryAbi,
          functionName: 'validationResponse',
          args: [h, ATTEST_RESPONSE, `svc://baseline/r/${i}`, h, ATTEST_TAG],
        }),
      ),
    ),
  )
  const t0 = performance.now()
  const sent: Hex[] = []
  for (const raw of requests) sent.push(await pub.sendRawTransaction({ serializedTransaction: raw }))
  for (const raw of responses) sent.push(await pub.sendRawTransaction({ serializedTransaction: raw }))
  const receipts = await Promise.all(sent.map((hash) => pub.waitForTransactionReceipt({ hash })))
  const baseMs = performance.now() - t0
  if (receipts.some((r) => r.status !== 'success')) throw new Error('a baseline transaction reverted')
  await chain.stop()

  // The real path, on a chain of its own: the device's lines attested by chain_attest, then
  // one sync run drains them through the attestor.
  const { chain: chain2, pub: pub2 } = await freshChain()
  const cfg = await loadAttestorConfig({ chain: chain2.info })
  if (!cfg.ok) throw new Error(cfg.error)
  const attestorServer = await startAttestorServer(cfg.config)
  stops.unshift(() => attestorServer.close())
  const dn2 = await pub2.getTransactionCount({ address: device.address })
  const an2 = await pub2.getTransactionCount({ address: attestor.address })

  const store = await openAttestStore(join(dir, 'store'))
  stops.unshift(() => store.close())
  const signer = signerFromKey(chain2.accounts.device.privateKey)
  const tool = createChainAttestTool({ store, signer })
  const signal = new AbortController().signal
  for (let i = 0; i < LINES; i++) {
    const r = await tool.run(
      { action: 'vend', request_uri: `svc://orders/${i}`, params: { slot: i % 12, price: '1.50' } },
      { runId: 'bench', sop: 'bench', step: 1, call: i, idempotencyKey: `bench:${i}`, signal },
    )
    if (!r.ok) throw new Error(r.error)
  }
  const sync = createAttestSync({ store, chain: chain2.info, attestorUrl: attestorServer.url, signer })
  const t1 = performance.now()
  const report = await sync.runOnce()
  const syncMs = performance.now() - t1
  const counts = store.counts()
  if (report.remaining !== 0 || counts.attested !== LINES)
    throw new Error(`sync left lines behind: ${JSON.stringify({ report, counts })}`)
  const txs =
    (await pub2.getTransactionCount({ address: device.address })) -
    dn2 +
    (await pub2.getTransactionCount({ address: attestor.address })) -
    an2
  if (txs !== 2 * LINES) throw new Error(`expected ${2 * LINES} transactions, the chain has ${txs}`)

  const syncRate = LINES / (syncMs / 1000)
  const baseRate = LINES / (baseMs / 1000)
  console.log(
    `sync ${LINES} lines to anvil: ${fmt(syncRate)} lines/s (${fmt(syncMs)} ms, ${txs} transactions, all attested)`,
  )
  console.log(
    `  the chain alone (fresh anvil), same 2 pre-signed transactions per line sent back to back: ${fmt(baseRate)} lines/s (${fmt(baseMs)} ms)   ratio ${(syncRate / baseRate).toFixed(2)}`,
  )
} finally {
  for (const stop of stops) await stop().catch(() => undefined)
}
