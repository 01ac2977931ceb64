// The attestation store (real LevelDB in a temp folder) and the device key file.
import { readFile, stat, writeFile, chmod } from 'node:fs/promises'
import { join } from 'node:path'
import { Level } from 'level'
import t from 'tap'
import { recoverMessageAddress } from 'viem'
import { loadOrCreateDeviceKey } from '../../hub/attest/device-key.ts'
import { loadNativeSecp256k1 } from '../../hub/attest/native-secp256k1.ts'
import { type AppendInput, openAttestStore } from '../../hub/attest/store.ts'
import { lineHash } from '../../records/hash.ts'
import { requestHashFor } from '../../records/request-hash.ts'
import { tempDir } from '../helpers/tmp.ts'

const input = (i: number, key = `k${i}`): AppendInput => ({
  idempotencyKey: key,
  action: 'a',
  requestUri: 'u',
  line: `{"i":${i}}`,
  paramsHash: lineHash(`{"i":${i}}`),
  signature: `0x${'11'.repeat(65)}`,
  signer: '0x0000000000000000000000000000000000000001',
})

t.test('device key: created 0600 once, then reused; bad files refused', async (t) => {
  const dir = await tempDir(t)
  const path = join(dir, 'sub', 'device.key')
  const [a, b] = await Promise.all([loadOrCreateDeviceKey(path), loadOrCreateDeviceKey(path)])
  t.equal(a.address, b.address, 'two starts at once agree on one key')
  t.equal((await stat(path)).mode & 0o777, 0o600)
  const again = await loadOrCreateDeviceKey(path)
  t.equal(again.address, a.address)
  const sig = await a.signLine('{"x":1}')
  t.equal(
    await recoverMessageAddress({ message: '{"x":1}', signature: sig }),
    a.address,
    'EIP-191 over the line',
  )
  await chmod(path, 0o644)
  await loadOrCreateDeviceKey(path)
  t.equal((await stat(path)).mode & 0o777, 0o600, 'tightened to 0600')
  const text = await readFile(path, 'utf8')
  await writeFile(join(dir, 'bad'), 'not a key')
  await t.rejects(loadOrCreateDeviceKey(join(dir, 'bad')), /device key .*bad: expected 32 bytes of hex/)
  await writeFile(join(dir, 'zero'), '0x' + '00'.repeat(32))
  await t.rejects(loadOrCreateDeviceKey(join(dir, 'zero')), /not a valid secp256k1 key/)
  t.equal(await readFile(path, 'utf8'), text, 'the key is never rewritten')
})

t.test('store: group commit, idempotency, counts, queue, reopen', async (t) => {
  const dir = await tempDir(t)
  const path = join(dir, 'db')
  let store = await openAttestStore(path)
  const results = await Promise.all(Array.from({ length: 200 }, (_, i) => store.append(input(i))))
  t.same(
    results.map((r) => r.record.seq).sort((a, b) => a - b),
    Array.from({ length: 200 }, (_, i) => i),
  )
  t.ok(results.every((r) => r.created))
  const r0 = results.find((r) => r.record.seq === 0)!.record
  t.equal(
    r0.requestHash,
    requestHashFor({ chainId: 10143, storeId: store.storeId, seq: 0, paramsHash: r0.paramsHash }),
  )

  // the same key at once, and later: one record
  const dup = await Promise.all([store.append(input(500, 'same')), store.append(input(501, 'same'))])
  t.equal(dup[0].record.seq, dup[1].record.seq)
  t.same(
    dup.map((d) => d.created),
    [true, false],
  )
  const later = await store.append(input(502, 'same'))
  t.same([later.created, later.record.line], [false, '{"i":500}'])
  t.equal(store.size(), 201)
  t.match(store.counts(), { total: 201, pending: 201 })

  const q = await store.queue(3)
  t.same(
    q.map((r) => r.seq),
    [0, 1, 2],
  )
  await store.update([
    { ...q[0]!, state: 'attested' },
    { ...q[1]!, state: 'requested' },
    { ...q[1]!, state: 'attested' },
  ])
  t.match(
    store.counts(),
    { total: 201, pending: 199, attested: 2, requested: 0 },
    'two updates of one record in a batch count once',
  )
  t.same(
    (await store.queue(2)).map((r) => r.seq),
    [2, 3],
    'attested lines leave the queue',
  )
  t.same(
    (await store.queue(2, 150)).map((r) => r.seq),
    [150, 151],
  )
  const ranged = []
  for await (const r of store.range(10, 13)) ranged.push(r.seq)
  t.same(ranged, [10, 11, 12])
  const id = store.storeId
  await store.close()
  await t.rejects(store.append(input(999)), /closed/)

  store = await openAttestStore(path)
  t.teardown(() => store.close())
  t.equal(store.storeId, id, 'store id survives')
  t.equal(store.size(), 201)
  t.match(store.counts(), { total: 201, pending: 199, attested: 2 })
  t.equal((await store.append(input(600))).record.seq, 201)
  t.equal((await store.byIdempotencyKey('same'))?.seq, dup[0].record.seq)
  t.equal(await store.get(10_000), undefined)
})

t.test(
  'store: failed lines are indexed with their reasons, also in a store written before the index',
  async (t) => {
    const dir = await tempDir(t)
    const path = join(dir, 'db')
    let store = await openAttestStore(path)
    const recs = (await Promise.all(Array.from({ length: 6 }, (_, i) => store.append(input(i))))).map(
      (r) => r.record,
    )
    recs.sort((a, b) => a.seq - b.seq)
    t.same(await store.failed(10), [], 'none failed yet')
    await store.update([
      { ...recs[1]!, state: 'failed', error: 'request hash taken' },
      { ...recs[4]!, state: 'failed', error: 'reverted: unknown' },
      { ...recs[2]!, state: 'attested' },
    ])
    t.same(
      (await store.failed(10)).map((r) => [r.seq, r.error]),
      [
        [1, 'request hash taken'],
        [4, 'reverted: unknown'],
      ],
    )
    t.same(
      (await store.failed(1, 2)).map((r) => r.seq),
      [4],
      'from a seq on, at most limit',
    )
    await store.close()

    // A store from before the index: its failed lines are found once at open.
    const db = new Level<string, unknown>(path, { valueEncoding: 'json' })
    await db.open()
    await db.batch([
      { type: 'del', key: 'm:failedIndex' },
      ...[1, 4].map((seq) => ({ type: 'del' as const, key: `f:${String(seq).padStart(12, '0')}` })),
    ])
    await db.close()
    store = await openAttestStore(path)
    t.teardown(() => store.close())
    t.same(
      (await store.failed(10)).map((r) => r.seq),
      [1, 4],
      'backfilled at open',
    )
    // Another chain: every line goes back to pending and leaves the failed index.
    await store.rebase('chain-a')
    await store.rebase('chain-b')
    t.same(await store.failed(10), [], 'a rebase empties it')
    t.match(store.counts(), { failed: 0, pending: 6 })
  },
)

t.test('record schema files: bad ones are named at load', async (t) => {
  const { loadRecordSchema } = await import('../../tools/chain_attest.ts')
  const dir = await tempDir(t)
  const w = async (name: string, text: string) => {
    await writeFile(join(dir, name), text)
    return join(dir, name)
  }
  t.match(await loadRecordSchema(await w('ok.json', '{"type":"object","required":["params"]}')), {
    ok: true,
    schema: { type: 'object' },
  })
  t.match(await loadRecordSchema(join(dir, 'none.json')), { ok: false, error: /none.json: not found/ })
  t.match(await loadRecordSchema(await w('bad.json', '{"type":')), { ok: false, error: /bad.json: not JSON/ })
  t.match(await loadRecordSchema(await w('arr.json', '[]')), {
    ok: false,
    error: /arr.json: must be a JSON object/,
  })
  t.match(await loadRecordSchema(await w('inv.json', '{"type":"nosuchtype"}')), {
    ok: false,
    error: /inv.json: .*type/,
  })
})

t.test(
  'svc attest export, with the store held and no hub answering, says so; once free it opens',
  async (t) => {
    const { main } = await import('../../cli/main.ts')
    const { svcPaths } = await import('../../hub/paths.ts')
    const { attestStorePath } = await import('../../hub/attest/store.ts')
    const home = await tempDir(t)
    const env = { ...process.env, SVC_HOME: home }
    const held = await openAttestStore(attestStorePath(svcPaths(env).data))
    const err: string[] = []
    const code = await main(['attest', 'export', '--out', 'x'], {
      out: () => {},
      err: (s) => void err.push(s),
      env,
      cwd: home,
    })
    await held.close()
    t.equal(code, 1)
    t.match(err.join(''), /no hub is running \(no .*hub-api.json\)/)
    const ok = await main(['attest', 'status', '--json'], {
      out: (s) => t.match(JSON.parse(s), { total: 0 }),
      err: () => {},
      env,
      cwd: home,
    })
    t.equal(ok, 0)
  },
)

const native = loadNativeSecp256k1()
t.test(
  'device signatures: libsecp256k1 and the pure-JS signer give the same bytes, and they recover to the device',
  { skip: native.ok ? false : `libsecp256k1 binary not loadable on this machine: ${native.error}` },
  async (t) => {
    const { signerFromKey } = await import('../../hub/attest/device-key.ts')
    const { recoverMessageAddress } = await import('viem')
    const key = '0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a'
    const fast = signerFromKey(key, 'libsecp256k1')
    const js = signerFromKey(key, 'noble')
    t.equal(fast.backend, 'libsecp256k1')
    t.equal(signerFromKey(key).backend, 'libsecp256k1', 'the native signer is the default where it loads')
    // Both recovery ids, multi-byte UTF-8, an empty line and a long one.
    const lines = [...Array.from({ length: 64 }, (_, i) => `{"i":${i},"s":"é✓"}`), '', 'x'.repeat(5000)]
    const sigs = await Promise.all(lines.map((l) => fast.signLine(l)))
    t.same(sigs, await Promise.all(lines.map((l) => js.signLine(l))))
    t.same(new Set(sigs.map((s) => s.slice(-2))), new Set(['1b', '1c']), 'v = 27 and v = 28 both occur')
    for (const [i, line] of lines.entries()) {
      if ((await recoverMessageAddress({ message: line, signature: sigs[i]! })) !== fast.address)
        t.fail(`line ${i} does not recover to the device`)
    }
    const other = signerFromKey(
      '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d',
      'libsecp256k1',
    )
    t.not(await other.signLine(lines[0]!), sigs[0], 'another key, another signature')
  },
)
