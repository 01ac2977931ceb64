// The soak: `svc hub` itself, as the CLI runs it, syncing its attested lines with the attestor,
// both behind a hostile RPC (429 with Retry-After, 5xx, dropped connections, answers lost after
// the node got the request, pooled transactions dropped, lying "nonce too low" and
// "underpriced", base-fee jumps, slow answers), SIGKILLed at seeded random points and started
// again on the same SVC_HOME. Then a last hub finishes, and every line is attested exactly once,
// in order, none lost, none requested twice, and the hub's store agrees with the chain.
// CI runs a short seeded schedule; the long one: SOAK_KILLS=100 npx tap --timeout=7200
// test/attest/hostile-soak.test.ts (SOAK_SEED, SOAK_LINES to vary it). Its figures are in
// bench/README.md ("hostile-RPC soak").
import { chmod, mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { parseAbiItem } from 'viem'
import { publicClientFor } from '../../chain/clients.ts'
import { startDevChain } from '../../chain/dev.ts'
import { readValidationStatus } from '../../chain/reads.ts'
import { signerFromKey } from '../../hub/attest/device-key.ts'
import type { AttestRecord } from '../../hub/attest/record.ts'
import { attestStorePath, openAttestStore } from '../../hub/attest/store.ts'
import { svcCli } from '../helpers/cli.ts'
import { svcPaths } from '../../hub/paths.ts'
import { loadAttestorConfig } from '../../market/attestor/config.ts'
import { startAttestorServer } from '../../market/attestor/server.ts'
import { lineHash } from '../../records/hash.ts'
import { attestLines } from '../helpers/attest-lines.ts'
import { startHostileRpc } from '../helpers/hostile-rpc.ts'
import { seeded } from '../helpers/seeded.ts'
import { killHub, startHubChild } from '../helpers/hub-process.ts'
import { freePort } from '../helpers/ports.ts'
import { tempDir } from '../helpers/tmp.ts'

const KILLS = Number(process.env.SOAK_KILLS ?? 5)
const LINES = Number(process.env.SOAK_LINES ?? (KILLS > 20 ? 300 : 60))
const SEED = Number(process.env.SOAK_SEED ?? 16)
const started = Date.now()
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

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

// The hub's home: its device key is the dev chain's enrolled device; [chain] points sync at the
// proxy and the attestor, in batches of 9 so a life of a few seconds ends mid-sync.
const home = await tempDir(t)
const env = { ...process.env, SVC_HOME: home }
const paths = svcPaths(env)
await mkdir(join(home, 'sops'), { recursive: true })
await writeFile(paths.deviceKey, `${chain.accounts.device.privateKey}\n`, { mode: 0o600 })
await chmod(paths.deviceKey, 0o600)
await writeFile(
  join(home, 'hub.toml'),
  `[hub]
sops_dir = "${join(home, 'sops')}"
log_level = "info"
[broker]
port = ${await freePort()}
[webhook]
enabled = false
[api]
port = 0
[chain]
rpc_url = "${proxy.url}"
validation_registry = "${chain.validationRegistry}"
agent_id = "${chain.agentId}"
attestor_address = "${chain.accounts.attestor.address}"
attestor_url = "${attestor.url}"
batch_executor = "${chain.info.batchExecutor}"
max_fee_gwei = 1000
stuck_after_s = 2.5
max_batch_lines = 9
`,
)
const storePath = attestStorePath(paths.data)
const signer = signerFromKey(chain.accounts.device.privateKey)
{
  const store = await openAttestStore(storePath)
  await attestLines(store, signer, LINES, 'soak', 'soak')
  await store.close()
}

/** The running hub's counts and sync state, through `svc attest status --json` as a user runs it. */
async function hubStatus(): Promise<{
  pending: number
  sending: number
  requested: number
  attested: number
}> {
  const r = await svcCli(env, home)('attest', 'status', '--json')
  if (r.code !== 0) throw new Error(`svc attest status: ${r.err}`)
  return JSON.parse(r.out)
}

const rand = seeded(SEED + 1)
let midSync = 0

t.test(`${KILLS} SIGKILLs of \`svc hub\` syncing behind a hostile RPC`, async (t) => {
  for (let k = 0; k < KILLS; k++) {
    const hub = await startHubChild(t, home)
    await sleep(300 + Math.floor(rand() * 2500))
    // Killed while it still had lines to send or answer: the kill landed mid-sync.
    const st = await hubStatus().catch(() => undefined)
    if (st && st.pending + st.sending + st.requested > 0) midSync++
    await killHub(hub)
  }
  t.pass(`${KILLS} kills, ${midSync} with lines still on their way`)
  t.ok(midSync > 0, 'at least one kill landed mid-sync')
})

t.test('then a last hub finishes: each line attested exactly once, in order; store = chain', async (t) => {
  // Still hostile: the hub must get through by itself (its loop backs off and retries).
  const hub = await startHubChild(t, home)
  for (;;) {
    const st = await hubStatus().catch(() => undefined)
    if (st && st.pending + st.sending + st.requested === 0) break
    await sleep(500)
  }
  hub.proc.kill('SIGTERM')
  await hub.exited
  const store = await openAttestStore(storePath)
  t.teardown(() => store.close())
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
    `soak: seed ${SEED}, ${KILLS} kills of svc hub (${midSync} mid-sync), ${LINES} lines, ${Math.round((Date.now() - started) / 1000)} s, ` +
      `${seen} RPC requests, faults ${JSON.stringify(faults)}, attestor warnings ${warnings.length}`,
  )
})
