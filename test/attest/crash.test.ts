// Crash test: a child attesting in a loop (with the sync queue running) is killed with SIGKILL
// 20 times. After each kill the store and the exported files agree, no acknowledged line is
// lost, none is stored twice; in the end sync requests each line exactly once (batched: many
// lines a transaction, none of them reverted).
import { spawn } from 'node:child_process'
import { appendFileSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import t, { type Test } from 'tap'
import { validationRegistryAbi } from '../../chain/abi.generated.ts'
import { publicClientFor } from '../../chain/clients.ts'
import { signerFromKey } from '../../hub/attest/device-key.ts'
import { exportAttestations } from '../../hub/attest/export.ts'
import type { AttestRecord } from '../../hub/attest/record.ts'
import { openAttestStore } from '../../hub/attest/store.ts'
import { createAttestSync } from '../../hub/attest/sync.ts'
import { verifyLine } from '../../hub/attest/verify-line.ts'
import { startDevAttestor } from '../helpers/dev-attestor.ts'
import { tempDir } from '../helpers/tmp.ts'

const ROUNDS = Number(process.env.CRASH_ROUNDS ?? 20)
const { chain, attestor } = await startDevAttestor(t)
const dir = await tempDir(t)
const storePath = join(dir, 'store')
const fixture = join(import.meta.dirname, 'fixtures', 'attest-loop.ts')

function runChild(start: number): Promise<{ acked: Set<number>; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', fixture], {
    env: {
      ...process.env,
      STORE: storePath,
      DEVICE_KEY: chain.accounts.device.privateKey,
      CHAIN: JSON.stringify(chain.info),
      ATTESTOR: attestor.url,
      START: String(start),
      THROTTLE_MS: '30',
      SYNC_LOG: process.env.SYNC_LOG ?? '',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const acked = new Set<number>()
  let stderr = ''
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()))
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (l) => {
      if (l === 'ready')
        setTimeout(() => process.kill(child.pid!, 'SIGKILL'), 150 + Math.floor(Math.random() * 900))
      else if (l.startsWith('ack ')) acked.add(Number(l.slice(4)))
    })
    child.once('exit', (code, sig) =>
      sig === 'SIGKILL'
        ? resolve({ acked, stderr })
        : reject(new Error(`child exited ${code ?? sig}: ${stderr}`)),
    )
  })
}

async function checkStore(t: Test, allAcked: Set<number>): Promise<number> {
  const store = await openAttestStore(storePath)
  try {
    const recs: AttestRecord[] = []
    for await (const r of store.range()) recs.push(r)
    t.equal(recs.length, store.size(), 'size = records')
    t.same(
      recs.map((r) => r.seq),
      recs.map((_, i) => i),
      'seqs are 0..n-1',
    )
    const keys = recs.map((r) => r.idempotencyKey)
    t.equal(new Set(keys).size, keys.length, 'no key stored twice')
    const missing = [...allAcked].filter((n) => !keys.includes(`loop:${n}`))
    t.same(missing, [], 'every acknowledged line is stored')
    const c = store.counts()
    const byState = { pending: 0, sending: 0, requested: 0, attested: 0, failed: 0 }
    for (const r of recs) byState[r.state]++
    t.same(c, { total: recs.length, ...byState }, 'counts agree with the records')
    const ex = await exportAttestations(store, join(dir, 'export'))
    const data = await readFile(ex.dataPath, 'utf8')
    const reqs = await readFile(ex.requestsPath, 'utf8')
    t.equal(data, recs.map((r) => r.line + '\n').join(''), 'operations.jsonl = the stored lines')
    t.equal(
      reqs,
      recs.map((r) => (r.state === 'attested' ? r.requestHash : '') + '\n').join(''),
      'requests line n ↔ line n',
    )
    // resume at the first key not stored; later keys that are stored must come back as no-ops
    let first = 0
    const have = new Set(keys)
    while (have.has(`loop:${first}`)) first++
    return first
  } finally {
    await store.close()
  }
}

t.test(`${ROUNDS} SIGKILLs`, async (t) => {
  const allAcked = new Set<number>()
  let start = 0
  for (let round = 0; round < ROUNDS; round++) {
    const { acked } = await runChild(start)
    for (const n of acked) allAcked.add(n)
    start = await checkStore(t, allAcked)
  }
  t.ok(allAcked.size > ROUNDS, `lines acknowledged across the kills: ${allAcked.size}`)
})

t.test('after the kills, sync finishes and each line was requested exactly once', async (t) => {
  const store = await openAttestStore(storePath)
  t.teardown(() => store.close())
  const sync = createAttestSync({
    store,
    chain: chain.info,
    attestorUrl: attestor.url,
    signer: signerFromKey(chain.accounts.device.privateKey),
    batchSize: 25,
    log: { info: (m) => process.env.SYNC_LOG && appendFileSync(process.env.SYNC_LOG, `parent ${m}\n`) },
  })
  const r = await sync.runOnce()
  t.equal(r.remaining, 0)
  const failed: string[] = []
  for await (const rec of store.range())
    if (rec.state === 'failed') failed.push(`line ${rec.seq + 1}: ${rec.error}`)
  t.same(failed.slice(0, 5), [], 'no line failed')
  const n = store.size()
  t.same(store.counts(), { total: n, pending: 0, sending: 0, requested: 0, attested: n, failed: 0 })
  const pub = publicClientFor(chain.rpcUrl)
  // Batched (the dev chain has the executor): every device transaction since genesis must have
  // succeeded, and together they requested each line once (getAgentValidations below).
  const sent = await pub.getTransactionCount({ address: chain.accounts.device.address })
  t.ok(sent < n, `batched: ${sent} nonces for ${n} lines`)
  const head = await pub.getBlockNumber()
  let reverted = 0
  for (let b = 1n; b <= head; b++) {
    const block = await pub.getBlock({ blockNumber: b, includeTransactions: true })
    for (const tx of block.transactions)
      if (tx.from.toLowerCase() === chain.accounts.device.address.toLowerCase())
        if ((await pub.getTransactionReceipt({ hash: tx.hash })).status !== 'success') reverted++
  }
  t.equal(reverted, 0, 'no request transaction reverted')
  const onChain = await pub.readContract({
    address: chain.validationRegistry,
    abi: validationRegistryAbi,
    functionName: 'getAgentValidations',
    args: [0n],
  })
  t.equal(onChain.length, n)
  const recs: AttestRecord[] = []
  for await (const rec of store.range()) recs.push(rec)
  t.same(
    [...onChain].sort(),
    recs.map((x) => x.requestHash).sort(),
    'the registry holds exactly the stored request hashes',
  )
  const ex = await exportAttestations(store, join(dir, 'final'))
  const data = await readFile(ex.dataPath, 'utf8')
  const reqs = await readFile(ex.requestsPath, 'utf8')
  for (const line of [1, Math.ceil(n / 2), n]) {
    const v = await verifyLine({
      dataText: data,
      requestsText: reqs,
      line,
      agentId: '0',
      attestor: chain.accounts.attestor.address,
      validationRegistry: chain.validationRegistry,
      client: pub,
    })
    t.ok(v.ok, `line ${line} verifies`)
  }
})
