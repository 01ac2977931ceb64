// Lines attested on one chain are not attested on another: when sync meets a chain with a
// different genesis (a dev chain started afresh) it says so, and attests them again there.
import { join } from 'node:path'
import { Level } from 'level'
import t from 'tap'
import { startDevChain } from '../../chain/dev.ts'
import { readValidationStatus } from '../../chain/reads.ts'
import { publicClientFor } from '../../chain/clients.ts'
import { signerFromKey } from '../../hub/attest/device-key.ts'
import { openAttestStore } from '../../hub/attest/store.ts'
import { createAttestSync } from '../../hub/attest/sync.ts'
import { loadAttestorConfig } from '../../market/attestor/config.ts'
import { startAttestorServer } from '../../market/attestor/server.ts'
import { createChainAttestTool } from '../../tools/chain_attest.ts'
import { type Teardown, tempDir } from '../helpers/tmp.ts'

async function chainWithAttestor(t: Teardown) {
  const chain = await startDevChain()
  t.teardown(() => chain.stop())
  const cfg = await loadAttestorConfig({ chain: chain.info })
  if (!cfg.ok) throw new Error(cfg.error)
  const srv = await startAttestorServer(cfg.config, {})
  t.teardown(() => srv.close())
  return { chain, attestorUrl: srv.url }
}

/** A store with three lines attested on a first chain, and a second chain that has never seen them. */
async function attestedThenSecondChain(t: Teardown & { teardown(fn: () => unknown): void }) {
  const dir = await tempDir(t)
  const dbPath = join(dir, 'db')
  const store = await openAttestStore(dbPath)
  const first = await chainWithAttestor(t)
  const signer = signerFromKey(first.chain.accounts.device.privateKey)
  const tool = createChainAttestTool({ store, signer })
  const signal = new AbortController().signal
  for (let i = 0; i < 3; i++)
    await tool.run(
      { action: 'a', request_uri: 'u', params: { i } },
      { runId: 'r', sop: 's', step: 1, call: i, idempotencyKey: `k${i}`, signal },
    )
  const warnings: string[] = []
  const log = { warn: (m: string | object) => warnings.push(String(m)) }
  const syncOn = (c: typeof first, s = store) =>
    createAttestSync({ store: s, chain: c.chain.info, attestorUrl: c.attestorUrl, signer, log }).runOnce()
  await syncOn(first)
  const second = await chainWithAttestor(t)
  return { dbPath, store, first, second, signer, warnings, syncOn }
}

t.test('a fresh chain: the lines go back to pending, are attested again, and the hub says why', async (t) => {
  const { store, first, second, signer, warnings, syncOn } = await attestedThenSecondChain(t)
  t.teardown(() => store.close())
  t.match(store.counts(), { attested: 3, pending: 0 })
  t.ok(store.chainMark(), 'the chain is marked once sync met it')
  const sent = await publicClientFor(first.chain.rpcUrl).getTransactionCount({ address: signer.address })
  await syncOn(first)
  t.same(warnings, [], 'the same chain again: nothing to say')
  t.equal(
    await publicClientFor(first.chain.rpcUrl).getTransactionCount({ address: signer.address }),
    sent,
    'and nothing sent again',
  )

  const rec = await store.get(0)
  const pub2 = publicClientFor(second.chain.rpcUrl)
  const before = await readValidationStatus(pub2, second.chain.info.validationRegistry, rec!.requestHash)
  t.match(before, { ok: false, kind: 'unknown' }, 'the new chain has never seen the line')
  const report = await syncOn(second)
  t.equal(warnings.length, 1)
  // Two dev chains started in the same second share their genesis: then the missing row says it.
  t.match(
    warnings[0],
    /is not the (one|chain) these lines were attested on; 3 lines will be attested again on it/,
  )
  t.match(report, { attested: 3, remaining: 0 })
  t.match(store.counts(), { total: 3, attested: 3, pending: 0 })
  const after = await readValidationStatus(pub2, second.chain.info.validationRegistry, rec!.requestHash)
  t.match(after, { ok: true }, 'the row exists on the new chain')
})

t.test(
  'a chain with the same mark but none of the rows (same genesis second): the rows decide',
  async (t) => {
    const { dbPath, store, second, warnings, syncOn } = await attestedThenSecondChain(t)
    // Give the store the second chain's own mark, as two chains started in the same second would.
    const genesis = await publicClientFor(second.chain.rpcUrl).getBlock({ blockNumber: 0n })
    await store.close()
    const db = new Level<string, unknown>(dbPath, { valueEncoding: 'json' })
    await db.put('m:chain', `${genesis.hash}:${second.chain.info.validationRegistry.toLowerCase()}`)
    await db.close()
    const reopened = await openAttestStore(dbPath)
    t.teardown(() => reopened.close())
    const report = await syncOn(second, reopened)
    t.equal(warnings.length, 1)
    t.match(
      warnings[0],
      /this chain has no row for line 3, which was attested .*; 3 lines will be attested again on it/,
    )
    t.match(report, { attested: 3, remaining: 0 })
  },
)

t.test('a store from before the mark: the first chain met is taken as its own, nothing resent', async (t) => {
  const dir = await tempDir(t)
  const store = await openAttestStore(join(dir, 'db'))
  t.teardown(() => store.close())
  t.equal(store.chainMark(), undefined)
  t.equal(await store.rebase('0xabc:0xdef'), 0, 'no mark yet: no line goes back')
  t.equal(store.chainMark(), '0xabc:0xdef')
})
