// What of the engine's history log can be read, before the store is opened for a repair
// (hub/engine/README.md, "The history log"). Opening the log cuts the newest segment after its
// last whole batch; a repair first sets those bytes aside in `<engine>/lost/`, so that damage in
// the middle of the newest segment (not a torn tail) leaves its later batches on disk for a
// closer look. A segment before the newest is never changed: what follows its first unreadable
// frame is reported, and left where it is.
import { mkdir, open, readdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { scanBatches } from '../engine/log/frames.ts'

const SEGMENT = /^[0-9a-f]{8}\.seg$/

export interface SegmentScan {
  name: string
  bytes: number
  batches: number
  /** Where its readable batches end: bytes past it cannot be read. */
  readable: number
}

export interface HistoryScan {
  segments: SegmentScan[]
  /** The newest segment's bytes past its last whole batch, set aside before the store cuts them. */
  cut: { segment: string; bytes: number; keptAs: string } | null
}

/** Reads every segment of `<engine>/history`; the newest one's unreadable tail is copied into `lostDir`. */
export async function scanHistory(historyDir: string, lostDir: string): Promise<HistoryScan> {
  const names = (await readdir(historyDir).catch(() => [] as string[])).filter((n) => SEGMENT.test(n)).sort()
  const segments: SegmentScan[] = []
  let cut: HistoryScan['cut'] = null
  for (const [i, name] of names.entries()) {
    const fh = await open(join(historyDir, name), 'r')
    let buf: Buffer
    try {
      buf = await fh.readFile()
    } finally {
      await fh.close()
    }
    const { batches, end } = scanBatches(buf)
    segments.push({ name, bytes: buf.length, batches: batches.length, readable: end })
    if (i === names.length - 1 && end < buf.length) {
      await mkdir(lostDir, { recursive: true })
      const keptAs = join(lostDir, `history-${name}.from-${end}.tail`)
      await writeFile(keptAs, buf.subarray(end), { flush: true })
      cut = { segment: name, bytes: buf.length - end, keptAs }
    }
  }
  return { segments, cut }
}
