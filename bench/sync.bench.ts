// Sync to the chain, per-line against batched, in one run: LINES lines go from a hub's attest
// store to attested rows on a local anvil, every check both sides make included, first with no
// batch executor (one validationRequest transaction per line from the device, one
// validationResponse per line from the attestor, through the same sender as batches, one
// transaction in flight), then batched (many calls per transaction
// through the EIP-7702 batch executor, chain/README.md: Batching). Each side gets a fresh chain
// of its own: anvil slows down as its chain grows (measured here: 437 transfers/s at 1,000
// blocks, 184/s at 5,000), so sharing one would favour whoever goes first. Gas per line is the
// gas of every block mined during the sync over the lines.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { ChainInfo } from '../chain/chain-file.ts'
import { publicClientFor } from '../chain/clients.ts'
import { type DevChain, startDevChain } from '../chain/dev.ts'
import { signerFromKey } from '../hub/attest/device-key.ts'
import { openAttestStore } from '../hub/attest/store.ts'
import { createAttestSync } from '../hub/attest/sync.ts'
import { loadAttestorConfig } from '../market/attestor/config.ts'
import { startAttestorServer } from '../market/attestor/server.ts'
import { createChainAttestTool } from '../tools/chain_attest.ts'

const LINES = Number(process.env.BENCH_LINES ?? 10_000)
const fmt = (n: number) => Math.round(n).toLocaleString('en-US')
const dir = await mkdtemp(join(tmpdir(), 'svc-bench-sync-'))
const stops: (() => Promise<unknown>)[] = [() => rm(dir, { recursive: true, force: true })]

interface Figures {
  rate: number
  ms: number
  gasPerLine: number
  txs: number
}

async function run(mode: 'per-line' | 'batched'): Promise<Figures> {
  const chain: DevChain = await startDevChain()
  stops.unshift(() => chain.stop())
  const info: ChainInfo = { ...chain.info }
  if (mode === 'per-line') delete info.batchExecutor
  const pub = publicClientFor(chain.rpcUrl)
  const cfg = await loadAttestorConfig({ chain: info })
  if (!cfg.ok) throw new Error(cfg.error)
  const attestor = await startAttestorServer(cfg.config)
  stops.unshift(() => attestor.close())
  const store = await openAttestStore(join(dir, mode))
  stops.unshift(() => store.close())
  const signer = signerFromKey(chain.accounts.device.privateKey)
  const tool = createChainAttestTool({ store, signer })
  const signal = new AbortController().signal
  for (let i = 0; i < LINES; i++) {
    const r = await tool.run(
      { action: 'vend', request_uri: `svc://orders/${i}`, params: { slot: i % 12, price: '1.50' } },
      { runId: 'bench', sop: 'bench', step: 1, call: i, idempotencyKey: `bench:${i}`, signal },
    )
    if (!r.ok) throw new Error(r.error)
  }
  const sync = createAttestSync({ store, chain: info, attestorUrl: attestor.url, signer })
  const from = await pub.getBlockNumber()
  const nonces0 =
    (await pub.getTransactionCount({ address: chain.accounts.device.address })) +
    (await pub.getTransactionCount({ address: chain.accounts.attestor.address }))
  const t0 = performance.now()
  const report = await sync.runOnce()
  const ms = performance.now() - t0
  const counts = store.counts()
  if (report.remaining !== 0 || counts.attested !== LINES) {
    for await (const r of store.range())
      if (r.state === 'failed') console.error(`line ${r.seq + 1}: ${r.error}`)
    throw new Error(`${mode}: sync left lines behind: ${JSON.stringify({ report, counts })}`)
  }
  const to = await pub.getBlockNumber()
  let gas = 0n
  const numbers: bigint[] = []
  for (let b = from + 1n; b <= to; b++) numbers.push(b)
  for (let i = 0; i < numbers.length; i += 200) {
    const blocks = await Promise.all(numbers.slice(i, i + 200).map((n) => pub.getBlock({ blockNumber: n })))
    for (const b of blocks) gas += b.gasUsed
  }
  const txs =
    (await pub.getTransactionCount({ address: chain.accounts.device.address })) +
    (await pub.getTransactionCount({ address: chain.accounts.attestor.address })) -
    nonces0
  await attestor.close()
  await store.close()
  await chain.stop()
  return { rate: LINES / (ms / 1000), ms, gasPerLine: Number(gas) / LINES, txs }
}

try {
  const per = await run('per-line')
  console.log(
    `per-line  ${LINES} lines: ${fmt(per.rate)} lines/s (${fmt(per.ms)} ms, ${per.txs} transactions), ${fmt(per.gasPerLine)} gas/line`,
  )
  const bat = await run('batched')
  console.log(
    `batched   ${LINES} lines: ${fmt(bat.rate)} lines/s (${fmt(bat.ms)} ms, ${bat.txs} nonces incl. 2 delegations), ${fmt(bat.gasPerLine)} gas/line`,
  )
  console.log(`gas per line batched/per-line: ${(bat.gasPerLine / per.gasPerLine).toFixed(2)}`)
  console.log(`sync ratio batched/per-line: ${(bat.rate / per.rate).toFixed(1)}x`)
} finally {
  for (const stop of stops) await stop().catch(() => undefined)
}
