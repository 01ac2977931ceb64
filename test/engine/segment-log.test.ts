// The history log's segments (hub/engine/log/segment-log.ts, frames.ts), real files in a temp
// folder: a batch after which too little of its page is left for another is padded with zeroes
// to the page's end, a scan and a reopen step over them and keep every batch and the padding, and
// a batch cut short after such padding is cut off back to the padding's end.
import { open, stat } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { PAGE, encodeBatch, sealBatch } from '../../hub/engine/log/frames.ts'
import { SegmentLog } from '../../hub/engine/log/segment-log.ts'
import { tempDir } from '../helpers/tmp.ts'

/** A sealed batch of one put whose value is `n` bytes of text (deflate keeps most of it). */
async function batch(i: number, n: number): Promise<Buffer> {
  let value = ''
  for (let k = 0; value.length < n; k++) value += ((i * 7919 + k * 104_729) % 1_000_003).toString(36)
  return sealBatch(encodeBatch([{ type: 'put', key: `k${i}`, value: value.slice(0, n) }]).bytes)
}

t.test(
  'a batch that leaves too little of its page is padded to its end; scans and reopens keep every batch',
  async (t) => {
    const dir = join(await tempDir(t, 'svc-seglog-'), 'history')
    const log = await SegmentLog.open(dir, 8 * 1024 * 1024)
    const ends: number[] = []
    const padded: number[] = []
    for (let i = 0; i < 40; i++) {
      const b = await batch(i, 300 + ((i * 37) % 900))
      const before = log.position().off
      const at = await log.append(b, Date.now())
      t.equal(at.off, before, `batch ${i} starts where the last write ended`)
      const end = at.off + b.length
      const rest = (PAGE - (end % PAGE)) % PAGE
      if (rest > 0 && rest < Math.min(b.length, 1024)) {
        t.equal(log.position().off, end + rest, `batch ${i}: padded to its page's end`)
        padded.push(i)
      } else t.equal(log.position().off, end, `batch ${i}: not padded`)
      ends.push(end)
    }
    const gap = padded.find((i) => i < 39)
    t.ok(gap !== undefined, `some batches were padded (${padded.length})`)
    const end = log.position().off
    t.same(
      (await log.scan(1)).map((b) => b.ops[0]!.op.key),
      Array.from({ length: 40 }, (_, i) => `k${i}`),
      'a scan reads every batch, in order',
    )
    // From where a padded batch ends, as the store catches up from `meta!applied`.
    const fromEnd = await log.scan(1, ends[gap!]!)
    t.equal(
      fromEnd[0]?.ops[0]?.op.key,
      `k${gap! + 1}`,
      'a scan from the end of a batch steps over its padding',
    )
    await log.close()

    const again = await SegmentLog.open(dir, 8 * 1024 * 1024)
    t.equal(again.position().off, end, 'a reopen keeps every batch and the padding: nothing is cut')
    t.equal((await again.scan(1)).length, 40)
    await again.close()
  },
)

t.test("a batch cut short after padding is cut off to the padding's end", async (t) => {
  const dir = join(await tempDir(t, 'svc-seglog-torn-'), 'history')
  const log = await SegmentLog.open(dir, 8 * 1024 * 1024)
  const first = await batch(1, 5000)
  await log.append(first, Date.now())
  t.equal(log.position().off, PAGE, `a batch of ${first.length} bytes, padded to the page's end`)
  await log.close()
  const clean = await SegmentLog.open(dir, 8 * 1024 * 1024)
  t.equal(clean.position().off, PAGE, 'a reopen keeps the padding after the last batch')
  await clean.close()
  // A batch at the next page whose write never finished: its header, part of its body.
  const seg = join(dir, '00000001.seg')
  const fh = await open(seg, 'r+')
  const torn = (await batch(2, 5000)).subarray(0, 200)
  await fh.write(torn, 0, torn.length, PAGE)
  await fh.close()
  const again = await SegmentLog.open(dir, 8 * 1024 * 1024)
  t.equal((await stat(seg)).size, PAGE, 'cut off after the padding')
  await again.append(await batch(3, 5000), Date.now())
  t.same(
    (await again.scan(1)).map((b) => b.ops[0]!.op.key),
    ['k1', 'k3'],
    'the next batch follows the last whole one',
  )
  await again.close()
})
