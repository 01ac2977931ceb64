// The whole path on a real anvil: a SOP step's chain_attest call → a stored, signed line →
// sync (device requests, attestor answers) → exported files → a registry row that passes the
// five verify conditions. Then the ways a line or a row must fail, each for its own reason.
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { type Hex, keccak256, recoverMessageAddress, stringToHex } from 'viem'
import { validationRegistryAbi } from '../../chain/abi.generated.ts'
import { publicClientFor, walletClientFor } from '../../chain/clients.ts'
import { registerAgent } from '../../chain/deploy.ts'
import { signerFromKey } from '../../hub/attest/device-key.ts'
import { exportAttestations } from '../../hub/attest/export.ts'
import { openAttestStore } from '../../hub/attest/store.ts'
import { createAttestSync } from '../../hub/attest/sync.ts'
import { verifyLine } from '../../hub/attest/verify-line.ts'
import { lineHash } from '../../records/hash.ts'
import { createChainAttestTool } from '../../tools/chain_attest.ts'
import type { ToolContext } from '../../tools/types.ts'
import { startDevAttestor } from '../helpers/dev-attestor.ts'
import { tempDir } from '../helpers/tmp.ts'

const { chain, attestor } = await startDevAttestor(t)
const pub = publicClientFor(chain.rpcUrl)
const dir = await tempDir(t)
const store = await openAttestStore(join(dir, 'attest'))
t.teardown(() => store.close())
const signer = signerFromKey(chain.accounts.device.privateKey)
const schema = {
  type: 'object',
  required: ['action', 'params'],
  properties: {
    params: { type: 'object', required: ['slot'], properties: { slot: { type: 'integer', minimum: 1 } } },
  },
}
const tool = createChainAttestTool({ store, signer, schema })
const ctx = (key: string): ToolContext => ({
  runId: 'run-1',
  sop: 'vend',
  step: 3,
  call: 0,
  idempotencyKey: key,
  signal: new AbortController().signal,
})
const sync = createAttestSync({ store, chain: chain.info, attestorUrl: attestor.url, signer, batchSize: 4 })
const verify = (dataText: string, requestsText: string, line: number, agentId = chain.agentId) =>
  verifyLine({
    dataText,
    requestsText,
    line,
    agentId,
    attestor: chain.accounts.attestor.address,
    validationRegistry: chain.validationRegistry,
    client: pub,
  })

t.test('step → line → sync → row passing all five conditions', async (t) => {
  const outs = []
  for (let i = 0; i < 6; i++) {
    const r = await tool.run(
      {
        action: 'vend',
        request_uri: `svc://orders/${i}`,
        params: { slot: i + 1, price: '1.50', note: 'ünïcode ✓' },
      },
      ctx(`run-1:3:${i}`),
    )
    t.ok(r.ok, `step ${i} succeeded`)
    if (r.ok) outs.push(r.output as { seq: number; line: string; paramsHash: Hex; requestHash: Hex })
  }
  t.same(
    outs.map((o) => o.seq),
    [0, 1, 2, 3, 4, 5],
  )
  const first = outs[0]!
  t.equal(first.paramsHash, lineHash(first.line), 'paramsHash = keccak256(line)')
  t.match(
    first.line,
    /^\{"action":"vend","at":"[^"]+","params":\{"note":"ünïcode ✓","price":"1.50","slot":1\},"request_uri":"svc:\/\/orders\/0"\}$/,
    'RFC 8785 key order',
  )
  const rec = await store.get(0)
  t.equal(
    await recoverMessageAddress({ message: rec!.line, signature: rec!.signature }),
    chain.accounts.device.address,
    'signed by the device key',
  )
  t.equal(store.counts().pending, 6)

  // idempotent: same key → the stored line, nothing written
  const again = await tool.run(
    { action: 'vend', request_uri: 'svc://orders/other', params: { slot: 9 } },
    ctx('run-1:3:0'),
  )
  t.same(again, { ok: true, output: first })
  t.equal(store.size(), 6)

  // not yet attested: export has blank request lines
  const out = join(dir, 'export')
  let ex = await exportAttestations(store, out)
  t.same([ex.lines, ex.attested], [6, 0])
  t.equal(await readFile(ex.requestsPath, 'utf8'), '\n'.repeat(6))

  const progress: number[] = []
  const sync2 = createAttestSync({
    store,
    chain: chain.info,
    attestorUrl: attestor.url,
    signer,
    batchSize: 4,
    log: { progress: (p) => p.phase === 'attest' && progress.push(p.done) },
  })
  const rep = await sync2.runOnce()
  t.same(rep, { requested: 6, attested: 6, failed: 0, remaining: 0 })
  t.same(progress, [4, 6], 'progress per request transaction of at most 4 lines')
  t.same(store.counts(), { total: 6, pending: 0, sending: 0, requested: 0, attested: 6, failed: 0 })

  ex = await exportAttestations(store, out)
  const dataText = await readFile(ex.dataPath, 'utf8')
  const reqText = await readFile(ex.requestsPath, 'utf8')
  t.equal(dataText, outs.map((o) => o.line + '\n').join(''))
  t.equal(reqText, outs.map((o) => o.requestHash + '\n').join(''))
  for (let n = 1; n <= 6; n++) {
    const v = await verify(dataText, reqText, n)
    t.ok(v.ok, `line ${n} verifies`)
  }
  // a second sync has nothing to do and sends nothing
  const nonce = await pub.getTransactionCount({ address: chain.accounts.device.address })
  t.same(await sync.runOnce(), { requested: 0, attested: 0, failed: 0, remaining: 0 })
  t.equal(await pub.getTransactionCount({ address: chain.accounts.device.address }), nonce)
  // Batched, at most 4 lines a transaction: two transactions, the first carrying the device's
  // EIP-7702 delegation (its authorization takes a nonce of its own).
  t.equal(nonce, 3, 'two request transactions for six lines')

  // one changed character → condition 4
  const tampered = dataText.replace('"slot":3', '"slot":4')
  const bad = await verify(tampered, reqText, 3)
  t.equal(bad.ok, false)
  if (!bad.ok) {
    t.equal(bad.condition, 4)
    t.equal(bad.code, 'BAD_INPUT')
    t.match(bad.error, /responseHash/)
  }
  t.ok((await verify(tampered, reqText, 2)).ok, 'other lines unaffected')
  const wrongAgent = await verify(dataText, reqText, 1, '7')
  t.equal(wrongAgent.ok ? 0 : wrongAgent.condition, 1)
})

t.test('a failing record schema fails the step with the reason and writes nothing', async (t) => {
  const before = store.size()
  const r = await tool.run(
    { action: 'vend', request_uri: 'svc://orders/x', params: { slot: 0 } },
    ctx('bad-1'),
  )
  t.same(r, { ok: false, code: 'BAD_INPUT', error: 'record schema: record.params.slot must be >= 1' })
  const r2 = await tool.run(
    { action: 'vend', request_uri: 'svc://orders/x', params: { price: 1 } },
    ctx('bad-2'),
  )
  t.same(r2, {
    ok: false,
    code: 'BAD_INPUT',
    error: "record schema: record.params must have required property 'slot'",
  })
  const r3 = await tool.run({ action: '', request_uri: 'x', params: {} }, ctx('bad-3'))
  t.equal(r3.ok, false)
  const r4 = await tool.run({ action: 'vend', request_uri: 'x', params: [] }, ctx('bad-4'))
  t.same(r4, { ok: false, code: 'BAD_INPUT', error: 'chain_attest: params must be an object' })
  t.equal(store.size(), before)
  t.equal(await store.byIdempotencyKey('bad-1'), undefined)
})

t.test('rows made otherwise fail for their own reason', async (t) => {
  const { device, attestor: att, buyer } = chain.accounts
  const devW = walletClientFor(chain.rpcUrl, device.privateKey)
  const attW = walletClientFor(chain.rpcUrl, att.privateKey)
  const buyW = walletClientFor(chain.rpcUrl, buyer.privateKey)
  const line = '{"action":"vend","params":{"slot":1}}'
  const ph = lineHash(line)
  async function row(
    reqWallet: typeof devW,
    validator: Hex,
    agent: bigint,
    respWallet: typeof devW,
    response: number,
    tag: string,
    name: string,
  ) {
    const rh = keccak256(stringToHex(`row-${name}`))
    let h = await reqWallet.writeContract({
      address: chain.validationRegistry,
      abi: validationRegistryAbi,
      functionName: 'validationRequest',
      args: [validator, agent, 'u', rh],
    })
    await pub.waitForTransactionReceipt({ hash: h })
    h = await respWallet.writeContract({
      address: chain.validationRegistry,
      abi: validationRegistryAbi,
      functionName: 'validationResponse',
      args: [rh, response, 'u', ph, tag],
    })
    await pub.waitForTransactionReceipt({ hash: h })
    return verify(line + '\n', rh + '\n', 1)
  }
  const agent1 = await registerAgent(buyW, pub, chain.identityRegistry, 'svc://agents/other')
  const cases = [
    { name: 'good', r: await row(devW, att.address, 0n, attW, 100, 'svc-action', 'good'), want: 0 },
    { name: 'empty tag allowed', r: await row(devW, att.address, 0n, attW, 100, '', 'notag'), want: 0 },
    {
      name: 'another agent',
      r: await row(buyW, att.address, agent1, attW, 100, 'svc-action', 'agent'),
      want: 1,
    },
    {
      name: 'another validator',
      r: await row(devW, buyer.address, 0n, buyW, 100, 'svc-action', 'validator'),
      want: 2,
    },
    { name: 'response 99', r: await row(devW, att.address, 0n, attW, 99, 'svc-action', 'resp'), want: 3 },
    { name: 'another tag', r: await row(devW, att.address, 0n, attW, 100, 'other-tag', 'tag'), want: 5 },
  ]
  for (const c of cases) t.equal(c.r.ok ? 0 : c.r.condition, c.want, c.name)
  const unknown = await verify(line + '\n', keccak256(stringToHex('none')) + '\n', 1)
  t.equal(unknown.ok ? 0 : unknown.step, 3, 'an unknown hash fails at step 3')
  t.match(unknown, { ok: false, code: 'NOT_FOUND' }, 'as a row that is not there')
  const blank = await verify(line + '\n', '\n', 1)
  t.match(blank.ok ? '' : blank.error, /blank/)
  t.match(blank, { ok: false, code: 'CONFLICT', step: 2 }, 'a line not attested yet')
  const past = await verify(line + '\n', '\n', 2)
  t.match(past.ok ? '' : past.error, /no line 2/)
  t.match(past, { ok: false, code: 'BAD_INPUT' })
})
