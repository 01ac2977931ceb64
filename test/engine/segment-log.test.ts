// The history log's segments (hub/engine/log/segment-log.ts, frames.ts), real files in a temp
// folder: a batch after which too little of its page is left for another is padded with zeroes
// to the page's end, a scan and a reopen step over them and keep every batch and the padding, and
// a batch cut short after such padding is cut off back to the padding's end. A batch seals to
// frames that unseal to it on either side of the size deflated on the main thread, and the
// segment being appended is open for writes that return once on the disk (O_DSYNC).
import { constants } from 'node:fs'
import { open, stat } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { PAGE, SEAL_ON_MAIN_BYTES, encodeBatch, sealBatch, unseal } from '../../hub/engine/log/frames.ts'
import { SegmentLog } from '../../hub/engine/log/segment-log.ts'
import { openFiles, openFlags } from '../helpers/open-files.ts'
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

t.test(
  'a batch seals and unseals to itself whether it is deflated on the main thread or off it',
  async (t) => {
    for (const size of [100, SEAL_ON_MAIN_BYTES - 200, SEAL_ON_MAIN_BYTES + 1, 4 * SEAL_ON_MAIN_BYTES]) {
      const frames = encodeBatch(
        Array.from({ length: Math.ceil(size / 100) }, (_, i) => ({
          type: 'put' as const,
          key: `run!${i}`,
          value: `{"seq":${i},"v":${(i * 7919) % 1009}}`.padEnd(80, ' '),
        })),
      ).bytes
      const sealed = await sealBatch(frames)
      t.ok(sealed.length < frames.length, `${frames.length} bytes of frames deflated to ${sealed.length}`)
      t.same(unseal(sealed), frames, `${frames.length} bytes of frames unseal to themselves`)
    }
  },
)

/** The open flags of this process's descriptors on `file`. */
async function flagsOn(file: string): Promise<number[]> {
  const out: number[] = []
  for (const { fd, path } of await openFiles()) {
    const flags = path === file ? await openFlags(fd) : null
    if (flags !== null) out.push(flags)
  }
  return out
}

t.test(
  'the segment being appended is open for writes that return once on the disk, after a roll too',
  { skip: process.platform === 'linux' ? false : 'reads /proc/self/fdinfo, which only Linux has' },
  async (t) => {
    const dir = join(await tempDir(t, 'svc-seglog-dsync-'), 'history')
    const log = await SegmentLog.open(dir, 16 * 1024)
    t.teardown(() => log.close())
    await log.append(await batch(1, 3000), Date.now())
    const first = await flagsOn(join(dir, '00000001.seg'))
    t.equal(first.length, 1, 'one descriptor on the first segment')
    t.ok((first[0]! & constants.O_DSYNC) !== 0, 'opened with O_DSYNC')
    for (let i = 2; log.position().seg === 1; i++) await log.append(await batch(i, 3000), Date.now())
    const second = await flagsOn(join(dir, '00000002.seg'))
    t.equal(second.length, 1, 'one descriptor on the segment rolled to')
    t.ok((second[0]! & constants.O_DSYNC) !== 0, 'opened with O_DSYNC')
    t.same(await flagsOn(join(dir, '00000001.seg')), [], 'the full segment is closed')
  },
)
