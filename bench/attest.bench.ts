// Attested lines per second through chain_attest (schema check + RFC 8785 + keccak + device
// signature + group-committed LevelDB sync batch), printed beside the raw LevelDB sync-batch
// rate measured in the same process on the same disk. Also the parts alone, to show where
// the time goes.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Level } from 'level'
import { type DeviceSigner, signerFromKey } from '../hub/attest/device-key.ts'
import { openAttestStore } from '../hub/attest/store.ts'
import { canonicalLine } from '../records/canonical.ts'
import { lineHash } from '../records/hash.ts'
import { createChainAttestTool } from '../tools/chain_attest.ts'

const SECONDS = Number(process.env.BENCH_SECONDS ?? 4)
const CONCURRENCY = 64
const dir = await mkdtemp(join(tmpdir(), 'svc-bench-attest-'))
const fmt = (n: number) => Math.round(n).toLocaleString('en-US')

async function timed(fn: () => Promise<number>): Promise<number> {
  const t0 = performance.now()
  const n = await fn()
  return n / ((performance.now() - t0) / 1000)
}

/** CONCURRENCY workers, each calling `step` back to back until `seconds` have passed. */
async function concurrentlyFor(seconds: number, step: () => Promise<void>): Promise<void> {
  const end = performance.now() + seconds * 1000
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < end) await step()
    }),
  )
}

function record(i: number) {
  return {
    action: 'vend',
    at: new Date().toISOString(),
    params: { slot: i % 12, price: '1.50', machine: 'vm-7', temp: 4.5 + (i % 7) / 10 },
    request_uri: `svc://orders/${i}`,
  }
}

try {
  // Baseline: one put per sync batch, back to back (what a naive store would do per line).
  const raw = new Level<string, string>(join(dir, 'raw'))
  await raw.open()
  const rawRate = await timed(async () => {
    let n = 0
    const end = performance.now() + SECONDS * 1000
    while (performance.now() < end)
      await raw.batch([{ type: 'put', key: `k${n++}`, value: 'x'.repeat(200) }], { sync: true })
    return n
  })
  await raw.close()

  // Parts alone (CPU): JCS + keccak; device signature.
  const jcsRate = await timed(async () => {
    let n = 0
    const end = performance.now() + 1000
    while (performance.now() < end) lineHash(canonicalLine(record(n++)))
    return n
  })
  const KEY = '0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a'
  const signer = signerFromKey(KEY)
  const jsSigner = signerFromKey(KEY, 'noble')
  const signRateOf = (s: DeviceSigner) =>
    timed(async () => {
      let n = 0
      const end = performance.now() + 1000
      while (performance.now() < end) await s.signLine(`line ${n++}`)
      return n
    })
  const signRate = await signRateOf(signer)
  const jsSignRate = await signRateOf(jsSigner)

  // The store alone: JCS + hash + group-committed sync batch, signature reused (not the real
  // path: shows what the store can take, so the gap to the line below is the signing cost).
  const bare = await openAttestStore(join(dir, 'bare'))
  const fixedSig = await signer.signLine('x')
  let j = 0
  const bareRate = await timed(async () => {
    await concurrentlyFor(SECONDS, async () => {
      const n = j++
      const line = canonicalLine(record(n))
      await bare.append({
        idempotencyKey: `b:${n}`,
        action: 'vend',
        requestUri: 'u',
        line,
        paramsHash: lineHash(line),
        signature: fixedSig,
        signer: signer.address,
      })
    })
    return j
  })
  await bare.close()

  // The real thing: concurrent steps, each awaiting its durable line; with the default signer,
  // then with the pure-JS one (what a machine without the libsecp256k1 binary gets).
  const schema = {
    type: 'object',
    required: ['action', 'params'],
    properties: {
      params: { type: 'object', required: ['slot'], properties: { slot: { type: 'integer', minimum: 0 } } },
    },
  }
  const signal = new AbortController().signal
  const fullPath = async (name: string, s: DeviceSigner): Promise<{ rate: number; lines: number }> => {
    const store = await openAttestStore(join(dir, name))
    const tool = createChainAttestTool({ store, signer: s, schema })
    let i = 0
    const rate = await timed(async () => {
      await concurrentlyFor(SECONDS, async () => {
        const n = i++
        const r = await tool.run(
          {
            action: 'vend',
            request_uri: `svc://orders/${n}`,
            params: { slot: n % 12, price: '1.50', machine: 'vm-7' },
          },
          { runId: 'bench', sop: 'bench', step: 1, call: n, idempotencyKey: `bench:${n}`, signal },
        )
        if (!r.ok) throw new Error(r.error)
      })
      return i
    })
    await store.close()
    return { rate, lines: i }
  }
  const { rate: attRate, lines: attested } = await fullPath('attest', signer)
  const { rate: jsRate } = await fullPath('attest-js', jsSigner)

  process.stdout.write(
    [
      `baseline  raw LevelDB sync batches (1 put each)   ${fmt(rawRate)} /s`,
      `measured  attested lines (schema+JCS+hash+sign+sync batch, ${CONCURRENCY} concurrent steps, ${signer.backend})   ${fmt(attRate)} lines/s   = ${(attRate / rawRate).toFixed(1)}x baseline   (aim >= 5,000)`,
      `measured  same, pure-JS signer (noble; machines without the libsecp256k1 binary)   ${fmt(jsRate)} lines/s   = ${(jsRate / rawRate).toFixed(1)}x baseline`,
      `store     JCS+hash+group-committed sync batch, no signing   ${fmt(bareRate)} lines/s   = ${(bareRate / rawRate).toFixed(1)}x baseline`,
      `parts     JCS+keccak ${fmt(jcsRate)} /s; device signature ${fmt(signRate)} /s (${signer.backend}), ${fmt(jsSignRate)} /s (noble), one core`,
      `lines attested: ${fmt(attested)} in ~${SECONDS} s`,
      '',
    ].join('\n'),
  )
} finally {
  await rm(dir, { recursive: true, force: true })
}
