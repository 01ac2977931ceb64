// The console's SOPs and Attestations pages, where their cost grows with the data:
// 1. The Attestations page's reads with 100,000 stored lines, 50 of them failed: the counts, the
//    first 20 waiting, the failed ones with their reasons (the store's failed index) and the
//    newest 10; beside the baseline of finding the failed lines without the index (a scan of
//    every line, what the page would otherwise do), in the same process on the same store.
// 2. A SOP's step graph as SVG (sopGraphSvg) for a 60-step SOP with jumps, retries and gotos,
//    beside `svc sop graph`'s text of the same data (graphText).
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { attestStatus } from '../hub/attest/api.ts'
import type { AttestRecord } from '../hub/attest/record.ts'
import { type AppendInput, openAttestStore } from '../hub/attest/store.ts'
import { sopGraphSvg } from '../hub/console/views/sop-graph-svg.ts'
import { blankStep } from '../sops/blank-step.ts'
import { graphText } from '../sops/graph.ts'
import type { Sop } from '../sops/types.ts'
import { sop } from '../test/engine/helpers.ts'
import { lineHash } from '../records/hash.ts'

const LINES = 100_000
const FAILED = 50
const ROUNDS = 9

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const pct = (xs: number[], p: number): number =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!
async function time(fn: () => Promise<unknown> | unknown): Promise<number> {
  const t0 = process.hrtime.bigint()
  await fn()
  return Number(process.hrtime.bigint() - t0) / 1e6
}

const input = (i: number): AppendInput => ({
  idempotencyKey: `bench:${i}`,
  action: 'vend',
  requestUri: 'svc://bench/sale',
  line: `{"n":${i}}`,
  paramsHash: lineHash(`{"n":${i}}`),
  signature: `0x${'11'.repeat(65)}`,
  signer: '0x0000000000000000000000000000000000000001',
})

async function attestationsPage(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-console-bench-'))
  try {
    const store = await openAttestStore(join(dir, 'attest'))
    const t0 = Date.now()
    // In chunks, as steps append: group-committed batches of 1,000.
    for (let i = 0; i < LINES; i += 1000)
      await Promise.all(Array.from({ length: 1000 }, (_, k) => store.append(input(i + k))))
    // Spread over the store, the way a bad hour of sync leaves them.
    const failedSeqs = Array.from({ length: FAILED }, (_, k) => Math.floor((k * LINES) / FAILED) + 7)
    const recs = (await Promise.all(failedSeqs.map((s) => store.get(s)))) as AttestRecord[]
    await store.update(
      recs.map((r) => ({ ...r, state: 'failed', error: 'request hash taken by another request' })),
    )
    console.log(
      `store: ${LINES.toLocaleString('en')} lines, ${FAILED} failed, written in ${Date.now() - t0} ms`,
    )

    const page = async () => {
      const size = store.size()
      const [waiting, failed] = await Promise.all([store.queue(20), store.failed(FAILED)])
      const newest: AttestRecord[] = []
      for await (const r of store.range(size - 10, size)) newest.push(r)
      return { status: attestStatus(store, null), waiting, failed, newest }
    }
    const scan = async () => {
      const failed: AttestRecord[] = []
      for await (const r of store.range()) if (r.state === 'failed' && failed.length < FAILED) failed.push(r)
      return failed
    }
    // Both find the same lines.
    const a = (await page()).failed.map((r) => r.seq)
    const b = (await scan()).map((r) => r.seq)
    if (JSON.stringify(a) !== JSON.stringify(b)) throw new Error('the index and the scan disagree')
    const withIndex: number[] = []
    const scanning: number[] = []
    for (let r = 0; r < ROUNDS; r++) {
      withIndex.push(await time(page))
      scanning.push(await time(scan))
    }
    const i = median(withIndex)
    const s = median(scanning)
    console.log(
      `attestations page reads (counts, 20 waiting, ${FAILED} failed, 10 newest): median ${i.toFixed(1)} ms, p90 ${pct(withIndex, 0.9).toFixed(1)} ms`,
    )
    console.log(
      `baseline, failed lines by a scan of every line: median ${s.toFixed(0)} ms, p90 ${pct(scanning, 0.9).toFixed(0)} ms  (${(s / i).toFixed(0)}× the page)`,
    )
    await store.close()
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

function bigSop(steps: number): Sop {
  const origin = { file: 'SOP.md', line: 1 }
  return sop({
    name: 'bench-graph',
    description: 'a long SOP',
    steps: Array.from({ length: steps }, (_, k) => {
      const n = k + 1
      // Every 5th step switches forward, every 7th retries, every 9th jumps back on failure.
      return blankStep(n, `Step number ${n} of the long procedure`, origin, {
        ...(n % 5 === 0 && n + 3 <= steps
          ? {
              switch: [
                { name: 'hi', condition: `$.steps.${n}.v > 3`, target: n + 3 },
                { name: 'lo', condition: '', target: n + 1 },
              ],
            }
          : {}),
        ...(n % 7 === 0 ? { onFailure: { kind: 'retry' as const, count: 2 } } : {}),
        ...(n % 9 === 0 && n > 4 ? { onFailure: { kind: 'goto' as const, step: n - 4 } } : {}),
        ...(n === steps ? { terminal: true } : {}),
      })
    }),
  })
}

function graph(): void {
  const long = bigSop(60)
  const N = 200
  for (let k = 0; k < 20; k++) {
    sopGraphSvg(long)
    graphText(long)
  }
  const svg: number[] = []
  const text: number[] = []
  for (let r = 0; r < ROUNDS; r++) {
    const t0 = process.hrtime.bigint()
    for (let k = 0; k < N; k++) sopGraphSvg(long)
    const t1 = process.hrtime.bigint()
    for (let k = 0; k < N; k++) graphText(long)
    const t2 = process.hrtime.bigint()
    svg.push(Number(t1 - t0) / 1e6 / N)
    text.push(Number(t2 - t1) / 1e6 / N)
  }
  const out = sopGraphSvg(long)
  console.log(
    `step graph, 60 steps: SVG ${median(svg).toFixed(2)} ms a render (${out.width}×${out.height} px, ${(out.svg.value.length / 1024).toFixed(0)} KiB)`,
  )
  console.log(
    `baseline, svc sop graph's text of the same data: ${median(text).toFixed(3)} ms  (SVG ${(median(svg) / median(text)).toFixed(0)}×)`,
  )
}

await attestationsPage()
graph()
