// The ValidationBatchReader contract on a real anvil, read through the codec: against the real
// registry it gives, row for row, what the naive per-row read gives; against stand-in registries
// (placed by state override, like the reader) it packs every well-formed answer and marks every
// answer not shaped like getValidationStatus's return as misshapen, without failing the call.
import t from 'tap'
import { type Address, type Hex, encodeAbiParameters, encodeErrorResult, keccak256, toHex } from 'viem'
import { anvilAccount } from '../../chain/accounts.ts'
import { publicClientFor } from '../../chain/clients.ts'
import { startDevChain } from '../../chain/dev.ts'
import { readValidationStatus } from '../../chain/reads.ts'
import { batchReaderRuntime } from '../../market/chain/batch-reader.generated.ts'
import { type Decoded, decodeReadResult, encodeReadCall } from '../../market/chain/batch-reader-codec.ts'
import { READER_ADDRESS, readValidationOverride } from '../../market/chain/batch-reader.ts'
import { lineHash } from '../../records/index.ts'
import { writeRows } from './chain-rows.ts'

const dev = await startDevChain()
t.teardown(() => dev.stop())
const client = publicClientFor(dev.rpcUrl)
const hash = (s: string): Hex => keccak256(toHex(`reader:${s}`))

t.test('against the real registry: the same reads as one getValidationStatus call per row', async (t) => {
  const other = anvilAccount(8)
  const specs = [
    { requestHash: hash('plain'), paramsHash: lineHash('a') },
    { requestHash: hash('other validator'), paramsHash: lineHash('b'), validatorKey: other.privateKey },
    { requestHash: hash('response 99'), paramsHash: lineHash('c'), response: 99 },
    {
      requestHash: hash('long tag'),
      paramsHash: lineHash('d'),
      tag: 'a tag longer than one word ✓ '.repeat(3),
    },
    { requestHash: hash('empty tag'), paramsHash: lineHash('e'), tag: '' },
    { requestHash: hash('no response'), paramsHash: lineHash('f'), respond: false },
  ]
  await writeRows(dev, specs)
  const hashes = [...specs.map((s) => s.requestHash), hash('never requested')]
  // Rows per call 3: several calls, one of them shorter, all in order.
  const batched = await readValidationOverride(client, dev.validationRegistry, hashes, 3, 2)
  t.equal(batched.length, hashes.length)
  for (const [i, h] of hashes.entries()) {
    const one = await readValidationStatus(client, dev.validationRegistry, h)
    t.same(batched[i], one.ok ? { ok: true, row: one.value } : one, `row ${i}`)
  }
  t.same(batched[6], { ok: false, code: 'NOT_FOUND', kind: 'unknown', error: 'unknown request hash' })
})

/** Runtime code that answers every call with `blob`, returned or reverted. */
function answering(blob: Hex, how: 'return' | 'revert'): Hex {
  const size = ((blob.length - 2) / 2).toString(16).padStart(4, '0')
  // PUSH2 size PUSH1 14 PUSH1 0 CODECOPY PUSH2 size PUSH1 0 RETURN|REVERT; the blob follows (byte 14).
  return `0x61${size}600e60003961${size}6000${how === 'return' ? 'f3' : 'fd'}${blob.slice(2)}`
}

let registries = 0
async function readFrom(code: Hex, count = 1): Promise<Decoded> {
  const registry = `0x${(0xbeef0000 + ++registries).toString(16).padStart(40, '0')}` as Address
  const call = encodeReadCall(
    registry,
    Array.from({ length: count }, (_, i) => hash(`stand-in ${i}`)),
  )
  if (!call.ok) throw new Error(call.error)
  const r = await client.call({
    to: READER_ADDRESS,
    data: call.data,
    stateOverride: [
      { address: READER_ADDRESS, code: batchReaderRuntime },
      { address: registry, code },
    ],
  })
  return decodeReadResult(r.data ?? '0x', count)
}

const STATUS = [
  { type: 'address' },
  { type: 'uint256' },
  { type: 'uint8' },
  { type: 'bytes32' },
  { type: 'string' },
  { type: 'uint256' },
] as const
const RAW = [
  { type: 'uint256' },
  { type: 'uint256' },
  { type: 'uint256' },
  { type: 'bytes32' },
  { type: 'string' },
  { type: 'uint256' },
] as const
const validator = dev.accounts.attestor.address
const MISSHAPEN = {
  ok: false,
  code: 'CHAIN_REVERTED',
  kind: 'reverted',
  error: 'the registry answered data that does not decode',
}

t.test('stand-in registries: well-formed answers are packed, others marked misshapen', async (t) => {
  const tag = 'ü'.repeat(200)
  const good = encodeAbiParameters(STATUS, [validator, 2n ** 200n, 100, hash('p'), tag, 123n])
  t.same(await readFrom(answering(good, 'return'), 3), {
    ok: true,
    reads: Array.from({ length: 3 }, () => ({
      ok: true,
      row: { validator, agentId: 2n ** 200n, response: 100, responseHash: hash('p'), tag, lastUpdate: 123n },
    })),
  })
  // Word i of the well-formed answer replaced by `value`.
  const withWord = (i: number, value: bigint): Hex =>
    `0x${good.slice(2, 2 + 64 * i)}${value.toString(16).padStart(64, '0')}${good.slice(2 + 64 * (i + 1))}`
  const bad: [string, Hex][] = [
    ['response 300', encodeAbiParameters(RAW, [BigInt(validator), 1n, 300n, hash('p'), 'svc-action', 1n])],
    [
      'validator with high bits',
      encodeAbiParameters(RAW, [BigInt(validator) + 2n ** 160n, 1n, 100n, hash('p'), 'svc-action', 1n]),
    ],
    ['one word', `0x${'00'.repeat(32)}`],
    ['nothing', '0x'],
    ['tag offset past the end', withWord(4, 0x1000n)],
    // One byte more than follows the length word (the padding included: ABI decoders accept a tag ending in it).
    ['tag length past the end', withWord(6, BigInt((good.length - 2) / 2 - 0xe0 + 1))],
    ['tag length above 0xffff', withWord(6, 0x10000n)],
  ]
  for (const [name, blob] of bad)
    t.same(await readFrom(answering(blob, 'return'), 2), { ok: true, reads: [MISSHAPEN, MISSHAPEN] }, name)
})

t.test('stand-in registries that revert: the reason is kept', async (t) => {
  const abi = [{ type: 'error', name: 'Error', inputs: [{ name: 'reason', type: 'string' }] }] as const
  t.same(
    await readFrom(answering(encodeErrorResult({ abi, errorName: 'Error', args: ['unknown'] }), 'revert')),
    {
      ok: true,
      reads: [{ ok: false, code: 'NOT_FOUND', kind: 'unknown', error: 'unknown request hash' }],
    },
  )
  t.same(
    await readFrom(answering(encodeErrorResult({ abi, errorName: 'Error', args: ['paused'] }), 'revert'), 2),
    {
      ok: true,
      reads: [
        { ok: false, code: 'CHAIN_REVERTED', kind: 'reverted', error: 'paused' },
        { ok: false, code: 'CHAIN_REVERTED', kind: 'reverted', error: 'paused' },
      ],
    },
  )
  t.same(await readFrom(answering('0x', 'revert')), {
    ok: true,
    reads: [{ ok: false, code: 'CHAIN_REVERTED', kind: 'reverted', error: 'reverted without a reason' }],
  })
})
