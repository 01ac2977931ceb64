// The soak: the hub's sync and the attestor under it, both behind a hostile RPC (429 with
// Retry-After, 5xx, dropped connections, answers lost after the node got the request, pooled
// transactions dropped, lying "nonce too low" and "underpriced", base-fee jumps, slow answers),
// with the syncing child SIGKILLed at random points. Afterwards every line is attested exactly
// once, in order, none lost, none requested twice, and the store agrees with the chain.
// CI runs a short seeded schedule; the long one: SOAK_KILLS=100 npx tap --timeout=3600
// test/attest/hostile-soak.test.ts (SOAK_SEED, SOAK_LINES to vary it).
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import t from 'tap'
import { parseAbiItem } from 'viem'
import { publicClientFor } from '../../chain/clients.ts'
import { startDevChain } from '../../chain/dev.ts'
import { signerFromKey } from '../../hub/attest/device-key.ts'
import type { AttestRecord } from '../../hub/attest/record.ts'
import { openAttestStore } from '../../hub/attest/store.ts'
import { createAttestSync } from '../../hub/attest/sync.ts'
import { readValidationStatus } from '../../chain/reads.ts'
import { loadAttestorConfig } from '../../market/attestor/config.ts'
import { startAttestorServer } from '../../market/attestor/server.ts'
import { lineHash } from '../../records/hash.ts'
import { createChainAttestTool } from '../../tools/chain_attest.ts'
import { seeded, startHostileRpc } from '../helpers/hostile-rpc.ts'
import { tempDir } from '../helpers/tmp.ts'

const KILLS = Number(process.env.SOAK_KILLS ?? 6)
const LINES = Number(process.env.SOAK_LINES ?? (KILLS > 20 ? 200 : 60))
const SEED = Number(process.env.SOAK_SEED ?? 16)
const started = Date.now()

const chain = await startDevChain({ blockTime: 0.25 })
t.teardown(() => chain.stop())
const rates = {
  '429': 0.02,
  '5xx': 0.02,
  drop: 0.015,
  timeout: 0.01,
  'tx-dropped': 0.15,
  'nonce-too-low': 0.1,
  underpriced: 0.1,
  'basefee-jump': 0.01,
  slow: 0.03,
}
const proxy = await startHostileRpc({ target: chain.rpcUrl, seed: SEED, rates, hangMs: 2500 })
t.teardown(() => proxy.stop())
const hostileChain = { ...chain.info, rpcUrl: proxy.url }
const cfg = await loadAttestorConfig({ chain: hostileChain })
if (!cfg.ok) throw new Error(cfg.error)
const warnings: string[] = []
const attestor = await startAttestorServer({
  ...cfg.config,
  rpcTimeoutMs: 1500,
  stuckAfterMs: 2500,
  feeCapGwei: 1000,
  warn: (m) => warnings.push(m),
})
t.teardown(() => attestor.close())
const dir = await tempDir(t)
const storePath = join(dir, 'store')
const fixture = join(import.meta.dirname, 'fixtures', 'hostile-sync.ts')
const signer = signerFromKey(chain.accounts.device.privateKey)

{
  const store = await openAttestStore(storePath)
  const tool = createChainAttestTool({ store, signer })
  const signal = new AbortController().signal
  for (let i = 0; i < LINES; i++) {
    const r = await tool.run(
      { action: 'soak', request_uri: `svc://soak/${i}`, params: { i } },
      { runId: 'soak', sop: 'soak', step: 1, call: i, idempotencyKey: `soak:${i}`, signal },
    )
    if (!r.ok) throw new Error(r.error)
  }
  await store.close()
}

const rand = seeded(SEED + 1)
function runChild(): Promise<void> {
  const child = spawn(process.execPath, ['--import', 'tsx', fixture], {
    env: {
      ...process.env,
      STORE: storePath,
      DEVICE_KEY: chain.accounts.device.privateKey,
      CHAIN: JSON.stringify(hostileChain),
      ATTESTOR: attestor.url,
      SYNC_LOG: process.env.SYNC_LOG ?? '',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stderr = ''
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()))
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (l) => {
      if (l === 'ready')
        setTimeout(() => process.kill(child.pid!, 'SIGKILL'), 300 + Math.floor(rand() * 2500))
    })
    child.once('exit', (code, sig) =>
      sig === 'SIGKILL' ? resolve() : reject(new Error(`child exited ${code ?? sig}: ${stderr}`)),
    )
  })
}

t.test(`${KILLS} SIGKILLs of the syncing hub behind a hostile RPC`, async (t) => {
  for (let k = 0; k < KILLS; k++) await runChild()
  t.pass(`${KILLS} kills`)
})

t.test('then sync finishes: each line attested exactly once, in order; store = chain', async (t) => {
  const store = await openAttestStore(storePath)
  t.teardown(() => store.close())
  const midway = store.counts()
  t.comment(`after the kills: ${JSON.stringify(midway)}`)
  // Still hostile: the last run must get through by itself.
  const sync = createAttestSync({
    store,
    chain: hostileChain,
    attestorUrl: attestor.url,
    signer,
    maxBatchLines: 9,
    rpcTimeoutMs: 1500,
    rpcRetryCount: 6,
    stuckAfterMs: 2500,
    feeCapGwei: 1000,
  })
  let runs = 0
  for (;;) {
    runs++
    try {
      const r = await sync.runOnce()
      if (r.remaining === 0) break
    } catch (err) {
      if (runs > 200) throw err
    }
  }
  proxy.calm()
  const recs: AttestRecord[] = []
  for await (const r of store.range()) recs.push(r)
  t.equal(recs.length, LINES, 'no line lost or added')
  t.same(store.counts(), { total: LINES, pending: 0, sending: 0, requested: 0, attested: LINES, failed: 0 })
  t.same(await store.sends(), [], 'no request transaction left unsettled')

  const pub = publicClientFor(chain.rpcUrl) // the real node, for the check
  const requests = await pub.getLogs({
    address: chain.validationRegistry,
    event: parseAbiItem(
      'event ValidationRequest(address indexed validatorAddress, uint256 indexed agentId, string requestURI, bytes32 indexed requestHash)',
    ),
    fromBlock: 0n,
  })
  const responses = await pub.getLogs({
    address: chain.validationRegistry,
    event: parseAbiItem(
      'event ValidationResponse(address indexed validatorAddress, uint256 indexed agentId, bytes32 indexed requestHash, uint8 response, string responseURI, bytes32 responseHash, string tag)',
    ),
    fromBlock: 0n,
  })
  t.same(
    requests.map((l) => l.args.requestHash),
    recs.map((r) => r.requestHash),
    'every line requested exactly once, in seq order',
  )
  const answered = responses.map((l) => l.args.requestHash!)
  t.equal(new Set(answered).size, answered.length, 'no line answered twice')
  t.same(new Set(answered), new Set(recs.map((r) => r.requestHash)), 'every line answered')
  let agree = 0
  for (const r of recs) {
    const row = await readValidationStatus(pub, chain.validationRegistry, r.requestHash)
    if (
      row.ok &&
      row.value.validator === chain.accounts.attestor.address &&
      row.value.responseHash === lineHash(r.line) &&
      r.requestTx !== undefined &&
      (await pub.getTransactionReceipt({ hash: r.requestTx.hash })).status === 'success'
    )
      agree++
  }
  t.equal(agree, LINES, "each line's row and request transaction on chain match the store")
  const { requests: seen, ...faults } = proxy.counts
  t.comment(
    `soak: seed ${SEED}, ${KILLS} kills, ${LINES} lines, ${Math.round((Date.now() - started) / 1000)} s, final runs ${runs}, ` +
      `${seen} RPC requests, faults ${JSON.stringify(faults)}, attestor warnings ${warnings.length}`,
  )
})
