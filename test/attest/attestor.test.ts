// The attestor over HTTP against a real anvil: what it accepts, and every way it refuses,
// each refusal naming the field and sending no transaction.
import t from 'tap'
import { type Hex, keccak256, stringToHex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { validationRegistryAbi } from '../../chain/abi.generated.ts'
import { anvilAccount } from '../../chain/accounts.ts'
import { publicClientFor, walletClientFor } from '../../chain/clients.ts'
import { readValidationStatus } from '../../chain/reads.ts'
import { loadAttestorConfig } from '../../market/attestor/config.ts'
import { ATTEST_PATH, INFO_PATH } from '../../records/attestor-request.ts'
import { startAttestorServer } from '../../market/attestor/server.ts'
import { lineHash } from '../../records/hash.ts'
import { startDevAttestor } from '../helpers/dev-attestor.ts'
import { logLines } from '../helpers/log-lines.ts'
import { tempDir } from '../helpers/tmp.ts'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'

const { chain, attestor: srv, config } = await startDevAttestor(t, { uriBase: 'https://attest.example/' })
const pub = publicClientFor(chain.rpcUrl)
const { device, owner, attestor, buyer } = chain.accounts
const devW = walletClientFor(chain.rpcUrl, device.privateKey)
let n = 0

async function requested(validator: Hex = attestor.address): Promise<Hex> {
  const rh = keccak256(stringToHex(`att-${n++}`))
  const h = await devW.writeContract({
    address: chain.validationRegistry,
    abi: validationRegistryAbi,
    functionName: 'validationRequest',
    args: [validator, 0n, 'svc://r', rh],
  })
  await pub.waitForTransactionReceipt({ hash: h })
  return rh
}
const sign = (key: Hex, line: string) => privateKeyToAccount(key).signMessage({ message: line })
async function post(body: unknown) {
  const res = await fetch(srv.url + ATTEST_PATH, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  })
  return {
    status: res.status,
    body: (await res.json()) as {
      results?: { ok: boolean; error?: string; already?: boolean; txHash?: string | null }[]
      error?: string
    },
  }
}
const nonce = () => pub.getTransactionCount({ address: attestor.address })

t.test('info', async (t) => {
  const res = await fetch(srv.url + INFO_PATH)
  t.same(await res.json(), {
    address: attestor.address,
    chainId: 10143,
    validationRegistry: chain.validationRegistry,
  })
})

t.test('answers a device-signed line, once; an owner-signed line too', async (t) => {
  const line = '{"action":"vend","params":{"slot":1}}'
  const rh = await requested()
  let r = await post({
    agentId: '0',
    items: [{ requestHash: rh, line, signature: await sign(device.privateKey, line) }],
  })
  t.equal(r.status, 200)
  t.match(r.body.results, [{ ok: true, already: false, txHash: /^0x/ }])
  const row = await readValidationStatus(pub, chain.validationRegistry, rh)
  t.match(row, {
    ok: true,
    value: {
      validator: attestor.address,
      agentId: 0n,
      response: 100,
      responseHash: lineHash(line),
      tag: 'svc-action',
    },
  })
  const before = await nonce()
  r = await post({
    agentId: '0',
    items: [{ requestHash: rh, line, signature: await sign(device.privateKey, line) }],
  })
  t.match(r.body.results, [{ ok: true, already: true, txHash: null }])
  t.equal(await nonce(), before, 'a repeat sends nothing')
  const other = 'different line'
  r = await post({
    agentId: '0',
    items: [{ requestHash: rh, line: other, signature: await sign(device.privateKey, other) }],
  })
  t.match(r.body.results, [{ ok: false, error: /already answered for another line/ }])

  const rh2 = await requested()
  r = await post({
    agentId: '0',
    items: [{ requestHash: rh2, line, signature: await sign(owner.privateKey, line) }],
  })
  t.match(r.body.results, [{ ok: true }], 'the owner may sign')
})

t.test('item refusals name the reason and send nothing', async (t) => {
  const line = '{"x":1}'
  const before = await nonce()
  const stranger = anvilAccount(8)
  const cases: [unknown, RegExp][] = [
    [
      { requestHash: await requested(), line, signature: await sign(stranger.privateKey, line) },
      /signature: signed by 0x[0-9a-fA-F]{40}, which is neither agent 0's wallet nor its owner/,
    ],
    [
      { requestHash: keccak256(stringToHex('never')), line, signature: await sign(device.privateKey, line) },
      /requestHash: no validation request/,
    ],
    [
      { requestHash: await requested(buyer.address), line, signature: await sign(device.privateKey, line) },
      /requestHash: the request names validator/,
    ],
    [
      { requestHash: await requested(), line, signature: `0x${'11'.repeat(65)}` },
      /signature: not a valid signature/,
    ],
  ]
  const r = await post({ agentId: '0', items: cases.map((c) => c[0]) })
  t.equal(r.status, 200)
  cases.forEach(([, re], i) => t.match(r.body.results?.[i], { ok: false, error: re }))
  // The item is the documented body (chain/README.md, "The attestor: svc attestor"): its code stays in the attestor.
  for (const item of r.body.results ?? []) t.same(Object.keys(item).sort(), ['error', 'ok', 'requestHash'])
  t.equal(await nonce(), before)
})

t.test('bad bodies: 400 naming the field', async (t) => {
  const good = { requestHash: keccak256('0x01'), line: 'l', signature: `0x${'11'.repeat(65)}` }
  const before = await nonce()
  const cases: [unknown, RegExp, number?][] = [
    ['not json', /./],
    [[], /body: expected a JSON object/],
    [{ items: [good] }, /agentId: must be a decimal string/],
    [{ agentId: '01', items: [good] }, /agentId/],
    [{ agentId: '0', items: [] }, /items: must be a non-empty array/],
    [{ agentId: '0', items: Array(101).fill(good) }, /items: at most 100/],
    [{ agentId: '0', items: [{ ...good, requestHash: '0x12' }] }, /items\[0\]\.requestHash/],
    [{ agentId: '0', items: [{ ...good, line: '' }] }, /items\[0\]\.line: must be a non-empty string/],
    [{ agentId: '0', items: [{ ...good, line: 'a\nb' }] }, /items\[0\]\.line: must not contain a newline/],
    [{ agentId: '0', items: [good, { ...good, signature: '0xzz' }] }, /items\[1\]\.signature/],
    [{ agentId: '0', items: [good, good] }, /items\[1\]\.requestHash: repeated/],
    [{ agentId: '99', items: [good] }, /agent 99 does not exist/, 404],
  ]
  for (const [body, re, status] of cases) {
    const r = await post(body)
    t.equal(r.status, status ?? 400, JSON.stringify(body).slice(0, 60))
    t.match(r.body.error, re)
  }
  t.equal(await nonce(), before)
})

t.test("chain unreachable: 502 { error, code }, in the attestor's log with the error", async (t) => {
  const { log, lines } = logLines()
  const dead = await startAttestorServer({ ...config, rpcUrl: 'http://127.0.0.1:1' }, { log })
  t.teardown(() => dead.close())
  const res = await fetch(dead.url + ATTEST_PATH, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      agentId: '0',
      items: [{ requestHash: keccak256('0x01'), line: 'l', signature: `0x${'11'.repeat(65)}` }],
    }),
  })
  t.equal(res.status, 502)
  t.match(await res.json(), { error: /chain unreachable/, code: 'UNREACHABLE' })
  t.match(lines, [{ level: 50, status: 502, url: ATTEST_PATH, err: { message: /chain unreachable/ } }])
  const none = await fetch(dead.url + '/nothing')
  t.same(await none.json(), { error: 'not found', code: 'NOT_FOUND' })
})

t.test('config: key sources and mismatches', async (t) => {
  const dir = await tempDir(t)
  const keyFile = join(dir, 'k')
  await writeFile(keyFile, attestor.privateKey + '\n')
  const noAccounts = { ...chain.info, accounts: undefined }
  t.match(await loadAttestorConfig({ chain: noAccounts, keyFile }), { ok: true })
  t.match(await loadAttestorConfig({ chain: noAccounts, env: { SVC_ATTESTOR_KEY: attestor.privateKey } }), {
    ok: true,
  })
  t.match(await loadAttestorConfig({ chain: noAccounts }), {
    ok: false,
    code: 'BAD_CONFIG',
    error: /no attestor key/,
  })
  t.match(await loadAttestorConfig({ chain: noAccounts, env: { SVC_ATTESTOR_KEY: buyer.privateKey } }), {
    ok: false,
    code: 'BAD_CONFIG',
    error: /the attestor key is for/,
  })
  t.match(await loadAttestorConfig({ chain: noAccounts, env: { SVC_ATTESTOR_KEY: '0x1234' } }), {
    ok: false,
    code: 'BAD_CONFIG',
    error: /\$SVC_ATTESTOR_KEY: expected 32 bytes of hex/,
  })
  t.match(await loadAttestorConfig({ chain: noAccounts, keyFile: join(dir, 'missing') }), {
    ok: false,
    code: 'NOT_FOUND',
    error: /attestor key file/,
  })
})
