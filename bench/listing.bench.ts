// Building the largest listing (5,000 attested lines: export both files, check them, build and
// write the manifest) beside the attestation export alone (the two files, no checks or manifest)
// measured in the same process on the same store and disk.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Hex } from 'viem'
import { exportAttestations } from '../hub/attest/export.ts'
import { openAttestStore } from '../hub/attest/store.ts'
import { buildListingFiles } from '../hub/listing/build.ts'
import { canonicalLine, lineHash } from '../records/index.ts'

const N = Number(process.env.BENCH_N ?? 5000)
const ROUNDS = 5
const dir = await mkdtemp(join(tmpdir(), 'svc-bench-listing-'))
try {
  const store = await openAttestStore(join(dir, 'attest'))
  const appended = await Promise.all(
    Array.from({ length: N }, (_, i) => {
      const line = canonicalLine({
        action: 'vend.dispense',
        board: 'vend1',
        n: i,
        sensor: { pin: 7, value: i % 2 },
        at: 1_700_000_000 + i,
      })
      return store.append({
        idempotencyKey: `k${i}`,
        action: 'vend.dispense',
        requestUri: 'svc://vend1/dispense',
        line,
        paramsHash: lineHash(line),
        signature: `0x${'11'.repeat(65)}` as Hex,
        signer: `0x${'22'.repeat(20)}` as Hex,
      })
    }),
  )
  await store.update(appended.map((a) => ({ ...a.record, state: 'attested' as const })))

  const best = async (fn: (round: number) => Promise<unknown>): Promise<number> => {
    let min = Infinity
    for (let r = 0; r < ROUNDS; r++) {
      const t0 = performance.now()
      await fn(r)
      min = Math.min(min, performance.now() - t0)
    }
    return min
  }
  const baseline = await best((r) => exportAttestations(store, join(dir, `export-${r}`)))
  const build = await best(async (r) => {
    const b = await buildListingFiles(store, join(dir, `listing-${r}`), {}, '0')
    if (!b.ok || b.rows !== N) throw new Error(b.ok ? `rows ${b.rows}` : b.error)
  })
  await store.close()
  console.log(
    `listing build, ${N} lines (best of ${ROUNDS}): ${build.toFixed(1)} ms  (${Math.round((N / build) * 1000).toLocaleString('en-US')} lines/s)`,
  )
  console.log(
    `baseline: attestation export alone:  ${baseline.toFixed(1)} ms  (${Math.round((N / baseline) * 1000).toLocaleString('en-US')} lines/s)`,
  )
  console.log(
    `ratio build / export: ${(build / baseline).toFixed(2)}x (the checks and manifest cost ${(build - baseline).toFixed(1)} ms)`,
  )
} finally {
  await rm(dir, { recursive: true, force: true })
}
