// The history log's files: numbered segments in one folder, only ever appended to, each batch
// synced before it is acknowledged; old segments are dropped whole (retention.ts), never
// rewritten (hub/engine/README.md, "The history log").
import { constants } from 'node:fs'
import { type FileHandle, mkdir, open, readdir, stat, unlink } from 'node:fs/promises'
import { join } from 'node:path'
import { PAGE, scanBatches, type ScannedBatch } from './frames.ts'
import { errorText } from '../../../errors/text.ts'

/** Where a frame is: segment number, offset in it, length. */
export interface Locator {
  seg: number
  off: number
  len: number
}

export interface SegmentInfo {
  n: number
  bytes: number
  /** When the segment was last appended to (ms since the epoch): its newest record is no newer. */
  lastWriteAt: number
}

const NAME = /^([0-9a-f]{8})\.seg$/
const fileName = (n: number) => `${n.toString(16).padStart(8, '0')}.seg`
/**
 * The segment being appended is opened with O_DSYNC where the system has it: each write returns
 * once its data is on the disk, as a write and an fdatasync would, in one trip through libuv's
 * threads instead of two (bench/README.md, "peer: a lone event's round trips"). The disk is
 * written the same.
 */
const WRITE_SYNCS = constants.O_DSYNC !== undefined
const HEAD_FLAGS = constants.O_RDWR | constants.O_CREAT | (constants.O_DSYNC ?? 0)

/** An I/O error of the log, coded as the disk guard (hub/disk/errors.ts) knows a store's. */
function ioError(what: string, err: unknown): Error {
  const e = err as NodeJS.ErrnoException
  return Object.assign(new Error(`the engine's history log ${what}: ${e?.message ?? errorText(err)}`), {
    code: 'LEVEL_IO_ERROR',
    cause: err,
  })
}

export class SegmentLog {
  /** A handle per segment read, opened once however many reads ask for it at the same time. */
  private readers = new Map<number, Promise<FileHandle | null>>()

  private constructor(
    private readonly dir: string,
    private readonly segmentBytes: number,
    private head: { n: number; fh: FileHandle; size: number },
    private readonly infos: Map<number, SegmentInfo>,
  ) {}

  /**
   * Opens the log, creating its folder. The newest segment is read whole: a batch cut short
   * (no commit frame: the hub stopped between its write and its sync) is cut off the file.
   * `times`: when each full segment was last written, by the store's clock (`append` says when
   * a segment is full); a segment without one is dated by its file's time.
   */
  static async open(
    dir: string,
    segmentBytes: number,
    times: ReadonlyMap<number, number> = new Map(),
  ): Promise<SegmentLog> {
    await mkdir(dir, { recursive: true })
    const numbers = (await readdir(dir))
      .map((f) => NAME.exec(f))
      .filter((m): m is RegExpExecArray => m !== null)
      .map((m) => Number.parseInt(m[1]!, 16))
      .sort((a, b) => a - b)
    const infos = new Map<number, SegmentInfo>()
    for (const n of numbers) {
      const s = await stat(join(dir, fileName(n)))
      infos.set(n, { n, bytes: s.size, lastWriteAt: times.get(n) ?? s.mtimeMs })
    }
    const last = numbers.at(-1) ?? 1
    const fh = await open(join(dir, fileName(last)), HEAD_FLAGS)
    try {
      const buf = await fh.readFile()
      const { end } = scanBatches(buf)
      if (end < buf.length) {
        await fh.truncate(end)
        await fh.datasync()
      }
      if (numbers.length === 0) await syncDir(dir)
      const info = infos.get(last) ?? { n: last, bytes: 0, lastWriteAt: Date.now() }
      info.bytes = end
      infos.set(last, info)
      return new SegmentLog(dir, segmentBytes, { n: last, fh, size: end }, infos)
    } catch (err) {
      await fh.close()
      throw err
    }
  }

  /** Where the next batch goes: the segment being appended and its length. */
  position(): { seg: number; off: number } {
    return { seg: this.head.n, off: this.head.size }
  }

  /**
   * Appends one encoded batch, on the disk when it resolves (`HEAD_FLAGS`). A new segment is
   * started first when this one would pass its size. On an error the batch is cut off again, as
   * far as the disk lets.
   *
   * When what is left of the last page after a batch is too small for another like it, the
   * batch is written with zeroes to the page's end (`pagePad`): the next batch then starts a
   * page of its own rather than dirtying the synced one again, and a scan steps over the zeroes.
   * Every clean page a write dirties is a page the card writes (write_bytes counts it whole), so
   * an event at a time costs one page, not two one time in eight (bench/README.md, "endurance").
   */
  async append(bytes: Buffer, now: number): Promise<{ seg: number; off: number; full?: SegmentInfo }> {
    let full: SegmentInfo | undefined
    if (this.head.size > 0 && this.head.size + bytes.length > this.segmentBytes) {
      full = { ...this.infos.get(this.head.n)! }
      await this.roll(now)
    }
    const { fh, size: off } = this.head
    const pad = pagePad(off + bytes.length, bytes.length)
    const data = pad === 0 ? bytes : Buffer.concat([bytes, Buffer.alloc(pad)])
    try {
      // A write may take fewer bytes than asked (a nearly full disk): the rest is written again,
      // and fails with the disk's error if there is no room for it.
      for (let done = 0; done < data.length; ) {
        const { bytesWritten } = await fh.write(data, done, data.length - done, off + done)
        done += bytesWritten
      }
      if (!WRITE_SYNCS) await fh.datasync()
    } catch (err) {
      await fh.truncate(this.head.size).catch(() => undefined)
      throw ioError('could not be written', err)
    }
    this.head.size = off + data.length
    const info = this.infos.get(this.head.n)!
    info.bytes = this.head.size
    info.lastWriteAt = now
    return full ? { seg: this.head.n, off, full } : { seg: this.head.n, off }
  }

  /** Starts the next segment: created, and the folder synced so the new name survives a power cut. */
  private async roll(now: number): Promise<void> {
    const n = this.head.n + 1
    let fh: FileHandle
    try {
      fh = await open(join(this.dir, fileName(n)), HEAD_FLAGS)
      await syncDir(this.dir)
    } catch (err) {
      throw ioError('could not start a new segment', err)
    }
    await this.head.fh.close().catch(() => undefined)
    this.head = { n, fh, size: 0 }
    this.infos.set(n, { n, bytes: 0, lastWriteAt: now })
  }

  /** The frame at `loc`, or null when its segment is gone (dropped by retention). */
  async read(loc: Locator): Promise<Buffer | null> {
    const fh = loc.seg === this.head.n ? this.head.fh : await this.reader(loc.seg)
    if (!fh) return null
    const buf = Buffer.allocUnsafe(loc.len)
    const { bytesRead } = await fh.read(buf, 0, loc.len, loc.off)
    return bytesRead === loc.len ? buf : null
  }

  private reader(n: number): Promise<FileHandle | null> {
    let fh = this.readers.get(n)
    if (fh) return fh
    if (!this.infos.has(n)) return Promise.resolve(null)
    fh = open(join(this.dir, fileName(n)), 'r').then(
      async (h) => {
        // Dropped while it was being opened.
        if (this.infos.has(n)) return h
        await h.close()
        return null
      },
      () => null,
    )
    this.readers.set(n, fh)
    return fh
  }

  /** The committed batches of segment `n` from offset `from`. */
  async scan(n: number, from = 0): Promise<ScannedBatch[]> {
    const fh = n === this.head.n ? this.head.fh : await this.reader(n)
    if (!fh) return []
    const size = n === this.head.n ? this.head.size : (this.infos.get(n)?.bytes ?? 0)
    if (size <= from) return []
    const buf = Buffer.allocUnsafe(size - from)
    const { bytesRead } = await fh.read(buf, 0, buf.length, from)
    return scanBatches(buf.subarray(0, bytesRead), from).batches
  }

  /** Every segment, oldest first. */
  segments(): SegmentInfo[] {
    return [...this.infos.values()].sort((a, b) => a.n - b.n)
  }

  bytes(): number {
    let sum = 0
    for (const i of this.infos.values()) sum += i.bytes
    return sum
  }

  /** Deletes a segment that is not the one being appended. */
  async drop(n: number): Promise<void> {
    if (n === this.head.n) throw new Error(`segment ${n} is being written and cannot be dropped`)
    this.infos.delete(n)
    const fh = await this.readers.get(n)
    this.readers.delete(n)
    await fh?.close().catch(() => undefined)
    await unlink(join(this.dir, fileName(n))).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err
    })
    await syncDir(this.dir).catch(() => undefined)
  }

  async close(): Promise<void> {
    for (const fh of this.readers.values()) await (await fh)?.close().catch(() => undefined)
    this.readers.clear()
    await this.head.fh.close().catch(() => undefined)
  }
}

/**
 * The zeroes to write after a batch of `len` bytes ending at `end`: the rest of its page when
 * that is less than the batch, or than 1 KiB for a large one (a burst's), so the space given up
 * stays small. Measured on ext4 (bench/README.md, "endurance"): a write starting a page after a
 * partly written last page is charged two pages, one starting a page at the file's end one.
 */
function pagePad(end: number, len: number): number {
  const rest = (PAGE - (end % PAGE)) % PAGE
  return rest > 0 && rest < Math.min(len, 1024) ? rest : 0
}

/** A folder's entries made durable (a created or removed file's name). */
async function syncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r')
  try {
    await fh.sync()
  } finally {
    await fh.close()
  }
}
