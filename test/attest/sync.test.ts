// The sync queue when things are down: nothing is lost, nothing is sent twice, and the
// background loop backs off and then catches up by itself.
import { join } from 'node:path'
import t from 'tap'
import { publicClientFor } from '../../chain/clients.ts'
import { startDevChain } from '../../chain/dev.ts'
import { signerFromKey } from '../../hub/attest/device-key.ts'
import { openAttestStore } from '../../hub/attest/store.ts'
import { createAttestSync } from '../../hub/attest/sync.ts'
import { loadAttestorConfig } from '../../market/attestor/config.ts'
import { startAttestorServer } from '../../market/attestor/server.ts'
import { createChainAttestTool } from '../../tools/chain_attest.ts'
import { freePort } from '../helpers/ports.ts'
import { tempDir } from '../helpers/tmp.ts'
import { waitFor } from '../helpers/wait.ts'

const chain = await startDevChain()
t.teardown(() => chain.stop())
const cfg = await loadAttestorConfig({ chain: chain.info })
if (!cfg.ok) throw new Error(cfg.error)
const dir = await tempDir(t)
const store = await openAttestStore(join(dir, 'db'))
t.teardown(() => store.close())
const signer = signerFromKey(chain.accounts.device.privateKey)
const tool = createChainAttestTool({ store, signer })
const pub = publicClientFor(chain.rpcUrl)
const port = await freePort()
const attestorUrl = `http://127.0.0.1:${port}`
const signal = new AbortController().signal
for (let i = 0; i < 5; i++)
  await tool.run(
    { action: 'a', request_uri: 'u', params: { i } },
    { runId: 'r', sop: 's', step: 1, call: i, idempotencyKey: `k${i}`, signal },
  )

t.test('chain down: a clear error, nothing changes', async (t) => {
  const sync = createAttestSync({
    store,
    chain: { ...chain.info, rpcUrl: 'http://127.0.0.1:1' },
    attestorUrl,
    signer,
  })
  await t.rejects(sync.runOnce(), /chain: /)
  t.match(store.counts(), { pending: 5, attested: 0 })
})

t.test('attestor down: requests go out once, attestation waits', async (t) => {
  const sync = createAttestSync({ store, chain: chain.info, attestorUrl, signer })
  await t.rejects(sync.runOnce(), new RegExp(`attestor unreachable at ${attestorUrl}`))
  t.match(store.counts(), { pending: 0, requested: 5, attested: 0 })
  // One batched transaction for the five lines; it carried the device's EIP-7702 delegation,
  // which takes the nonce after its own.
  const nonce = await pub.getTransactionCount({ address: signer.address })
  t.equal(nonce, 2, 'five requests in one transaction (and the delegation)')
  t.match(
    await pub.getCode({ address: signer.address }),
    new RegExp(`^0xef0100${chain.info.batchExecutor!.slice(2)}$`, 'i'),
  )
  await t.rejects(sync.runOnce(), /attestor unreachable/)
  t.equal(await pub.getTransactionCount({ address: signer.address }), nonce, 'a retry does not request again')
})

t.test('the background loop backs off, then catches up when the attestor appears', async (t) => {
  const warnings: string[] = []
  const sync = createAttestSync({
    store,
    chain: chain.info,
    attestorUrl,
    signer,
    idleMs: 50,
    backoffMinMs: 50,
    backoffMaxMs: 200,
    log: { warn: (m) => warnings.push(String(m)) },
  })
  sync.start()
  await waitFor(() => warnings.length >= 2, 'two sync warnings')
  t.match(warnings[0], /sync failed, retrying in 50 ms: attestor unreachable/)
  t.match(warnings[1], /retrying in 100 ms/, 'backoff doubles')
  const srv = await startAttestorServer(cfg.config, { port })
  t.teardown(() => srv.close())
  await waitFor(() => store.counts().attested >= 5, 'the five lines to be attested')
  await sync.stop()
  t.match(store.counts(), { total: 5, attested: 5, requested: 0, pending: 0 })
  t.equal(await pub.getTransactionCount({ address: signer.address }), 2, 'still the one request transaction')
})
