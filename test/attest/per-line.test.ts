// One transaction per line (a chain without the EIP-7702 batch executor) behind hostile RPCs:
// the device's requests and the attestor's answers go out through the same sender as batches
// (fees from eth_feeHistory under the configured cap, a dropped or refused transaction replaced
// at its nonce with bumped fees, 429's Retry-After waited), straight to the registry, each line
// requested and answered exactly once, in seq order.
import { join } from 'node:path'
import t from 'tap'
import { type Hex, parseAbiItem, parseGwei } from 'viem'
import type { ChainInfo } from '../../chain/chain-file.ts'
import { publicClientFor } from '../../chain/clients.ts'
import { startDevChain } from '../../chain/dev.ts'
import { signerFromKey } from '../../hub/attest/device-key.ts'
import type { AttestRecord } from '../../hub/attest/record.ts'
import { openAttestStore } from '../../hub/attest/store.ts'
import { createAttestSync } from '../../hub/attest/sync.ts'
import { loadAttestorConfig } from '../../market/attestor/config.ts'
import { startAttestorServer } from '../../market/attestor/server.ts'
import { attestLines } from '../helpers/attest-lines.ts'
import { startHostileRpc } from '../helpers/hostile-rpc.ts'
import { tempDir } from '../helpers/tmp.ts'

const LINES = 16
const CAP_GWEI = 40

// Interval mining: a transaction waits in the pool, where the proxy can drop it.
const chain = await startDevChain({ blockTime: 0.25 })
t.teardown(() => chain.stop())
const pub = publicClientFor(chain.rpcUrl) // the real node, for the checks
// The device and the attestor each behind their own hostile RPC, so the faults each meets do
// not depend on how the two interleave: with these seeds both see drops among their first
// transactions (the proxy's transaction schedule is fixed per seed).
const hostile = (seed: number) =>
  startHostileRpc({
    target: chain.rpcUrl,
    seed,
    rates: { '429': 0.03, '5xx': 0.03, 'tx-dropped': 0.35, underpriced: 0.15, 'basefee-jump': 0.02 },
    baseFeeFactor: 2,
  })
const proxy = await hostile(7)
t.teardown(() => proxy.stop())
const attestorProxy = await hostile(8)
t.teardown(() => attestorProxy.stop())
const { batchExecutor: _none, ...rest } = chain.info
const perLine: ChainInfo = { ...rest, rpcUrl: proxy.url }

const cfg = await loadAttestorConfig({ chain: { ...perLine, rpcUrl: attestorProxy.url } })
if (!cfg.ok) throw new Error(cfg.error)
const attestorWarnings: string[] = []
const attestor = await startAttestorServer({
  ...cfg.config,
  stuckAfterMs: 800,
  feeCapGwei: CAP_GWEI,
  warn: (m) => attestorWarnings.push(m),
})
t.teardown(() => attestor.close())

t.test(
  'per-line sync under the hostile RPC: the batched path’s sender, each line once, in order',
  async (t) => {
    const dir = await tempDir(t)
    const store = await openAttestStore(join(dir, 'db'))
    t.teardown(() => store.close())
    const signer = signerFromKey(chain.accounts.device.privateKey)
    await attestLines(store, signer, LINES, 'per-line')
    const warnings: string[] = []
    const sync = createAttestSync({
      store,
      chain: perLine,
      attestorUrl: attestor.url,
      signer,
      stuckAfterMs: 800,
      feeCapGwei: CAP_GWEI,
      rpcTimeoutMs: 3000,
      log: { warn: (m) => warnings.push(String(m)) },
    })
    const nonce0 = await pub.getTransactionCount({ address: signer.address })
    const from = await pub.getBlockNumber()
    let runs = 0
    let rateLimited = false
    for (;;) {
      runs++
      try {
        if ((await sync.runOnce()).remaining === 0) break
      } catch (err) {
        // A run the transport's retries did not get through is tried again, as the hub's loop does.
        if (runs > 50) throw err
      }
      if (sync.status().rateLimitedUntil) rateLimited = true
    }
    proxy.calm()
    attestorProxy.calm()
    t.same(store.counts(), { total: LINES, pending: 0, sending: 0, requested: 0, attested: LINES, failed: 0 })
    t.same(await store.sends(), [], 'no transaction left unsettled')
    t.equal(
      (await pub.getTransactionCount({ address: signer.address })) - nonce0,
      LINES,
      'one nonce per line: nothing requested twice, no delegation',
    )
    t.equal(await pub.getCode({ address: signer.address }), undefined, 'the device is not delegated')

    const recs: AttestRecord[] = []
    for await (const r of store.range()) recs.push(r)
    const requests = await pub.getLogs({
      address: chain.validationRegistry,
      event: parseAbiItem(
        'event ValidationRequest(address indexed validatorAddress, uint256 indexed agentId, string requestURI, bytes32 indexed requestHash)',
      ),
      fromBlock: from,
    })
    t.same(
      requests.map((l) => l.args.requestHash),
      recs.map((r) => r.requestHash),
      'every line requested exactly once, in seq order',
    )
    const answers = await pub.getLogs({
      address: chain.validationRegistry,
      event: parseAbiItem(
        'event ValidationResponse(address indexed validatorAddress, uint256 indexed agentId, bytes32 indexed requestHash, uint8 response, string responseURI, bytes32 responseHash, string tag)',
      ),
      fromBlock: from,
    })
    t.same(
      answers.map((l) => l.args.requestHash).toSorted(),
      recs.map((r) => r.requestHash).toSorted(),
      'every line answered exactly once',
    )
    // Each request: its own type-2 transaction to the registry, fees under the cap.
    const txs = await Promise.all(recs.map((r) => pub.getTransaction({ hash: r.requestTx!.hash as Hex })))
    t.ok(
      txs.every(
        (x) => x.type === 'eip1559' && x.to?.toLowerCase() === chain.validationRegistry.toLowerCase(),
      ),
      'straight to the registry, one line a transaction',
    )
    t.ok(
      txs.every((x) => x.maxFeePerGas! <= parseGwei(String(CAP_GWEI))),
      `every max fee at or under the cap (${CAP_GWEI} gwei)`,
    )
    const answerTxs = await Promise.all(answers.map((l) => pub.getTransaction({ hash: l.transactionHash! })))
    t.ok(
      answerTxs.every((x) => x.type === 'eip1559' && x.maxFeePerGas! <= parseGwei(String(CAP_GWEI))),
      'the answers too: one per transaction, under the cap',
    )
    // The faults met: drops and refusals answered by replacement at the same nonce.
    const met = (f: 'tx-dropped' | 'underpriced' | '429') => proxy.counts[f] + attestorProxy.counts[f]
    t.ok(met('tx-dropped') > 0 && met('underpriced') > 0, 'the proxies dropped and refused')
    t.match(
      warnings.join('\n'),
      /nonce \d+: (not mined within 800 ms|the node asked for a higher fee); replaced \(\d+×\) at [\d.]+ gwei max/,
      "the device's requests were replaced at their nonce",
    )
    // The attestor's answers: a refusal from its proxy ("replacement transaction underpriced")
    // is answered by a replacement at a higher fee. How many of its sends meet which fault depends
    // on how many transactions it makes, and whether a dropped answer is replaced or first sent
    // again by a later call on how the calls interleave: neither is this test's to fix, so the
    // check is per refusal met, and the answers' count above must hold either way.
    const feeReplacements = attestorWarnings.filter((w) =>
      /^nonce \d+: the node asked for a higher fee; replaced/.test(w),
    ).length
    t.ok(
      attestorProxy.counts.underpriced === 0 || feeReplacements > 0,
      `the attestor's refused answers were replaced at a higher fee (${attestorProxy.counts.underpriced} refusals, ${feeReplacements} replacements)`,
    )
    t.ok(met('429') > 0, 'the proxies rate-limited')
    t.comment(
      `per-line: ${LINES} lines, ${runs} runs, rate-limited seen in status: ${rateLimited}, faults ${JSON.stringify(proxy.counts)}, the attestor's ${JSON.stringify(attestorProxy.counts)}`,
    )
  },
)
