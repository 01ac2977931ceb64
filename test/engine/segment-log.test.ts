// The history log's segments (hub/engine/log/segment-log.ts, frames.ts), real files in a temp
// folder: a batch that would cross a page boundary starts at it, the bytes skipped read as
// zeroes, a scan and a reopen step over them and keep every batch, and a batch cut short after
// such a gap is cut off back to the end of the last whole batch.
import { open, stat } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { PAGE, encodeBatch, sealBatch } from '../../hub/engine/log/frames.ts'
import { SegmentLog } from '../../hub/engine/log/segment-log.ts'
import { tempDir } from '../helpers/tmp.ts'

/** A sealed batch of one put whose value is `n` bytes of text (deflate keeps it near that size). */
async function batch(i: number, n: number): Promise<Buffer> {
  let value = ''
  for (let k = 0; value.length < n; k++) value += ((i * 7919 + k * 104_729) % 1_000_003).toString(36)
  return sealBatch(encodeBatch([{ type: 'put', key: `k${i}`, value: value.slice(0, n) }]).bytes)
}

t.test(
  'a batch that would cross a page boundary starts at it; scans and reopens keep every batch',
  async (t) => {
    const dir = join(await tempDir(t, 'svc-seglog-'), 'history')
    const log = await SegmentLog.open(dir, 8 * 1024 * 1024)
    const offsets: number[] = []
    const lens: number[] = []
    for (let i = 0; i < 40; i++) {
      const b = await batch(i, 300 + ((i * 37) % 900))
      const before = log.position().off
      const at = await log.append(b, Date.now())
      offsets.push(at.off)
      lens.push(b.length)
      const crosses = Math.floor(before / PAGE) !== Math.floor((before + b.length - 1) / PAGE)
      t.equal(
        at.off,
        crosses && before % PAGE !== 0 ? Math.ceil(before / PAGE) * PAGE : before,
        `batch ${i}'s place`,
      )
    }
    t.ok(
      offsets.some((o, i) => i > 0 && o > offsets[i - 1]! + lens[i - 1]!),
      'some batches moved to a boundary',
    )
    const scanned = await log.scan(1)
    t.equal(scanned.length, 40, 'a scan reads every batch')
    t.same(
      scanned.map((b) => b.ops[0]!.op.key),
      Array.from({ length: 40 }, (_, i) => `k${i}`),
      'in order',
    )
    // From where a batch ends, as the store catches up from `meta!applied`.
    const fromMid = await log.scan(1, offsets[10]! + lens[10]!)
    t.equal(fromMid[0]?.ops[0]?.op.key, 'k11', 'a scan from the end of a batch finds the next across a gap')
    const end = log.position().off
    await log.close()

    const again = await SegmentLog.open(dir, 8 * 1024 * 1024)
    t.equal(again.position().off, end, 'a reopen keeps every batch (the gaps are not a torn tail)')
    t.equal((await again.scan(1)).length, 40)
    await again.close()
  },
)

t.test('a batch cut short after a gap is cut off to the end of the last whole batch', async (t) => {
  const dir = join(await tempDir(t, 'svc-seglog-torn-'), 'history')
  const log = await SegmentLog.open(dir, 8 * 1024 * 1024)
  await log.append(await batch(1, 5000), Date.now())
  const whole = log.position().off
  t.ok(whole > PAGE / 2 && whole < PAGE, `a batch of more than half a page (${whole} bytes)`)
  await log.close()
  // A batch written at the next boundary whose write never finished: its header, part of its body.
  const seg = join(dir, '00000001.seg')
  const fh = await open(seg, 'r+')
  const torn = (await batch(2, 5000)).subarray(0, 200)
  await fh.write(torn, 0, torn.length, PAGE)
  await fh.close()
  t.ok((await stat(seg)).size > PAGE, 'the torn batch is past the gap')
  const again = await SegmentLog.open(dir, 8 * 1024 * 1024)
  t.equal((await stat(seg)).size, whole, 'cut off, gap and all')
  const next = await again.append(await batch(3, 5000), Date.now())
  t.equal(next.off, PAGE, 'the next batch goes to the boundary again')
  t.same(
    (await again.scan(1)).map((b) => b.ops[0]!.op.key),
    ['k1', 'k3'],
  )
  await again.close()
})
