// The batch reader's hand-written wire format: the call encodes as viem would, every record kind
// decodes to the read viem's decoder gave before, and malformed or short answers are errors with a
// clear message, never a throw. Ends with the reader fed a malformed answer by an RPC: every row
// fails as unreachable with that message.
import { createServer } from 'node:http'
import t from 'tap'
import { type Hex, encodeErrorResult, encodeFunctionData, keccak256, toHex } from 'viem'
import { publicClientFor } from '../../chain/clients.ts'
import { batchReaderAbi } from '../../market/chain/batch-reader.generated.ts'
import { decodeReadResult, encodeReadCall } from '../../market/chain/batch-reader-codec.ts'
import { readValidationOverride } from '../../market/chain/batch-reader.ts'
import { freePort } from '../helpers/ports.ts'
import { answer, misshapenRecord, okRecord, revertedRecord } from './batch-reader-records.ts'

const REGISTRY = '0x5FbDB2315678afecb367f032d93F642f64180aa3'
const VALIDATOR = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8'
const hashes = Array.from({ length: 5 }, (_, i) => keccak256(toHex(`codec:${i}`)))
const ERROR_ABI = [{ type: 'error', name: 'Error', inputs: [{ name: 'reason', type: 'string' }] }] as const
const reasonData = (reason: string): Hex =>
  encodeErrorResult({ abi: ERROR_ABI, errorName: 'Error', args: [reason] })

t.test('the call is the ABI encoding viem makes', async (t) => {
  for (const hs of [hashes, [], [hashes[0]!.toUpperCase().replace('0X', '0x') as Hex]]) {
    const e = encodeReadCall(REGISTRY, hs)
    t.ok(e.ok)
    if (e.ok)
      t.equal(e.data, encodeFunctionData({ abi: batchReaderAbi, functionName: 'read', args: [REGISTRY, hs] }))
  }
  t.match(encodeReadCall(REGISTRY, [`0x${'g'.repeat(64)}`]), { ok: false, error: /not hex/ })
  t.match(encodeReadCall(REGISTRY, ['0x1234']), { ok: false, error: /0x1234 is not 32 bytes/ })
  t.match(encodeReadCall('0x12' as Hex, hashes), { ok: false, error: /not an address/ })
})

t.test('each record kind decodes to its read', async (t) => {
  const tag = 'svc-action ✓ '.repeat(40) // multi-byte UTF-8, longer than one word
  const data = answer([
    okRecord({
      validator: VALIDATOR,
      agentId: 7n,
      response: 100,
      responseHash: hashes[0]!,
      tag,
      lastUpdate: 1_700_000_000n,
    }),
    okRecord({
      validator: VALIDATOR,
      agentId: 2n ** 255n + 3n,
      response: 0,
      responseHash: hashes[1]!,
      tag: '',
      lastUpdate: 2n ** 64n,
    }),
    revertedRecord(reasonData('unknown')),
    revertedRecord(reasonData('paused')),
    revertedRecord('0x'),
    revertedRecord(
      encodeErrorResult({
        abi: [{ type: 'error', name: 'Panic', inputs: [{ type: 'uint256' }] }],
        errorName: 'Panic',
        args: [0x11n],
      }),
    ),
    misshapenRecord(),
  ])
  const d = decodeReadResult(data, 7)
  if (!d.ok) return t.fail(d.error)
  t.same(d.reads[0], {
    ok: true,
    row: {
      validator: VALIDATOR,
      agentId: 7n,
      response: 100,
      responseHash: hashes[0],
      tag,
      lastUpdate: 1_700_000_000n,
    },
  })
  t.same(d.reads[1], {
    ok: true,
    row: {
      validator: VALIDATOR,
      agentId: 2n ** 255n + 3n,
      response: 0,
      responseHash: hashes[1],
      tag: '',
      lastUpdate: 2n ** 64n,
    },
  })
  const first = d.reads[0]!
  t.equal(first.ok && first.row.validator, VALIDATOR, 'EIP-55 checksummed, as viem returns it')
  t.same(d.reads[2], { ok: false, code: 'NOT_FOUND', kind: 'unknown', error: 'unknown request hash' })
  t.same(d.reads[3], { ok: false, code: 'CHAIN_REVERTED', kind: 'reverted', error: 'paused' })
  t.same(d.reads[4], {
    ok: false,
    code: 'CHAIN_REVERTED',
    kind: 'reverted',
    error: 'reverted without a reason',
  })
  t.same(d.reads[5], {
    ok: false,
    code: 'CHAIN_REVERTED',
    kind: 'reverted',
    error: 'reverted without a reason',
  })
  t.same(d.reads[6], {
    ok: false,
    code: 'CHAIN_REVERTED',
    kind: 'reverted',
    error: 'the registry answered data that does not decode',
  })
  t.same(decodeReadResult(answer([]), 0), { ok: true, reads: [] })
})

t.test('a malformed or short answer is an error naming what is wrong, not a throw', async (t) => {
  const ok = okRecord({
    validator: VALIDATOR,
    agentId: 1n,
    response: 100,
    responseHash: hashes[0]!,
    tag: 'svc-action',
    lastUpdate: 1n,
  })
  const good = answer([ok, ok])
  const cases: [string, string, number, RegExp][] = [
    ['empty', '0x', 2, /shorter than the 64-byte header/],
    ['not hex', `0x${'zz'.repeat(80)}`, 2, /not hex/],
    ['odd length', `${good}0`, 2, /not hex/],
    ['no 0x', good.slice(2), 2, /not hex/],
    ['header only half there', good.slice(0, 2 + 100), 2, /shorter than the 64-byte header/],
    ['offset not 0x20', `0x${'0'.repeat(62)}40${good.slice(66)}`, 2, /offset is not 0x20/],
    ['length past the end', `${good.slice(0, 66)}${'f'.repeat(64)}${good.slice(130)}`, 2, /runs past/],
    ['fewer records than hashes', good, 3, /2 records for 3 hashes/],
    ['more records than hashes', good, 1, /bytes after the last of 1 records/],
    ['record head cut short', answer([ok, ok.slice(0, 100)]), 2, /record 1 is cut short/],
    ['tag cut short', answer([ok, ok.slice(0, -4)]), 2, /record 1's tag is cut short/],
    [
      'revert data cut short',
      answer([revertedRecord(reasonData('unknown')).slice(0, -10)]),
      1,
      /record 0's revert data is cut short/,
    ],
    ['revert length cut short', answer(['0000']), 1, /record 0 is cut short/],
    ['unknown record kind', answer(['07']), 1, /record 0 has kind 7/],
  ]
  for (const [name, data, count, error] of cases) {
    const d = decodeReadResult(data, count)
    t.notOk(d.ok, name)
    if (d.ok) continue
    t.match(d.error, /^the batch reader answered malformed data: /, name)
    t.match(d.error, error, name)
  }
  t.ok(decodeReadResult(good, 2).ok, 'the unbroken answer decodes')
})

t.test('an RPC answering malformed data: every row fails with the reason, nothing throws', async (t) => {
  let result: unknown = '0x1234'
  const srv = createServer((req, res) => {
    let body = ''
    req.on('data', (c: Buffer) => (body += c))
    req.on('end', () => {
      const msg = JSON.parse(body) as { id: number }
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }))
    })
  })
  const port = await freePort()
  await new Promise<void>((r) => srv.listen(port, '127.0.0.1', r))
  t.teardown(() => new Promise<void>((r) => srv.close(() => r())))
  const client = publicClientFor(`http://127.0.0.1:${port}`)
  const short = await readValidationOverride(client, REGISTRY, hashes, 2, 2)
  t.equal(short.length, hashes.length)
  t.ok(
    short.every(
      (r) =>
        !r.ok &&
        r.kind === 'unreachable' &&
        /malformed data: 2 bytes, shorter than the 64-byte header/.test(r.error),
    ),
  )
  // Well formed but one record short for each call of two hashes.
  result = answer([misshapenRecord()])
  const few = await readValidationOverride(client, REGISTRY, hashes.slice(0, 4), 2, 2)
  t.equal(few.length, 4)
  t.ok(
    few.every(
      (r) => !r.ok && r.kind === 'unreachable' && /malformed data: 1 records for 2 hashes/.test(r.error),
    ),
    JSON.stringify(few[0]),
  )
})
