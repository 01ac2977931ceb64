// Every firmware flash the hub ran, one JSON line each in `<data_dir>/firmware/history.jsonl`:
// who, board, the image's SHA-256 and size, the firmware before and after, the outcome, when.
// A plain file rather than a LevelDB: a few records a month need no index, the engine's and the
// broker's LevelDBs are locked by the running hub and have schemas of their own, and a file reads
// with `tail` or `jq` whether a hub runs or not. Each append is written and fdatasync'ed before the
// flash goes on (a record is written when a flash starts and again when it ends; the later line of
// an id wins, so a flash cut short by a crash still shows, as `interrupted`). Bounded: past twice
// `max` lines the file is rewritten (temp file, fsync, rename) with the newest `max` flashes.
import { randomBytes } from 'node:crypto'
import { mkdir, open, readFile } from 'node:fs/promises'
import { dirname } from 'node:path'
import { writeFileAtomic } from '../../files/atomic-file.ts'

export const FLASH_OUTCOMES = ['started', 'flashed', 'rolled back', 'rollback failed', 'failed'] as const
export type FlashOutcome = (typeof FLASH_OUTCOMES)[number]

export interface FlashRecord {
  id: string
  board: string
  /** Who asked: `alice (local API)`, `owner (console)`, `ops (mqtt)`. */
  who: string
  via: 'api' | 'console' | 'mqtt'
  sha256: string
  /** Bytes of program in the image. */
  size: number
  /** The firmware the board named before the flash (`name/version`), null when it never said. */
  from: string | null
  /** The firmware the image names (`name/version`), null when it carries no identity. */
  to: string | null
  /** The image's line protocol, null without an identity. */
  proto: number | null
  downgrade: boolean
  /** `started` until the flash ends; one still `started` that no running flash owns was cut short. */
  outcome: FlashOutcome
  started: string
  finished: string | null
  error: string | null
  /** Where the image read back from the board before writing was kept, null when none was read. */
  previous: string | null
}

export interface FlashHistory {
  /** Appends one line and syncs it to disk before resolving. */
  append(r: FlashRecord): Promise<void>
  /** The board's flashes, newest first (all boards when `board` is null), at most `limit`. */
  list(board: string | null, limit?: number): Promise<FlashRecord[]>
}

export function newFlashId(now: number): string {
  return `${new Date(now)
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z')}-${randomBytes(4).toString('hex')}`
}

/** A line of the file, or null for what is not a record (a line torn by a power cut). */
export function parseRecordLine(line: string): FlashRecord | null {
  let v: unknown
  try {
    v = JSON.parse(line)
  } catch {
    return null
  }
  if (typeof v !== 'object' || v === null) return null
  const r = v as Partial<FlashRecord>
  if (typeof r.id !== 'string' || typeof r.board !== 'string' || typeof r.started !== 'string') return null
  if (!FLASH_OUTCOMES.includes(r.outcome as FlashOutcome)) return null
  return r as FlashRecord
}

/** One record per id (the last line of each wins), in the order the flashes started. */
export function mergeRecords(lines: readonly string[]): FlashRecord[] {
  const byId = new Map<string, FlashRecord>()
  for (const line of lines) {
    const r = parseRecordLine(line)
    if (!r) continue
    byId.delete(r.id)
    byId.set(r.id, r)
  }
  return [...byId.values()].sort((a, b) => (a.started < b.started ? -1 : a.started > b.started ? 1 : 0))
}

export function createFlashHistory(o: { file: string; max?: number }): FlashHistory {
  const max = o.max ?? 500
  let lines: number | null = null
  // One write at a time: appends keep their order and a compaction never races an append.
  let tail: Promise<unknown> = Promise.resolve()

  async function readLines(): Promise<string[]> {
    try {
      return (await readFile(o.file, 'utf8')).split('\n').filter((l) => l.trim() !== '')
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return []
      throw err
    }
  }

  async function append(r: FlashRecord): Promise<void> {
    await mkdir(dirname(o.file), { recursive: true })
    const fh = await open(o.file, 'a+')
    try {
      const { size } = await fh.stat()
      // A line torn by a crash must not swallow the next record: start it on a line of its own.
      let prefix = ''
      if (size > 0) {
        const last = Buffer.alloc(1)
        await fh.read(last, 0, 1, size - 1)
        if (last[0] !== 0x0a) prefix = '\n'
      }
      await fh.write(`${prefix}${JSON.stringify(r)}\n`)
      await fh.datasync()
    } finally {
      await fh.close()
    }
    lines = (lines ?? (await readLines()).length) + 1
    if (lines > 2 * max) {
      const kept = mergeRecords(await readLines()).slice(-max)
      await writeFileAtomic(o.file, kept.map((k) => `${JSON.stringify(k)}\n`).join(''))
      lines = kept.length
    }
  }

  return {
    append(r) {
      const next = tail.then(() => append(r))
      tail = next.catch(() => undefined)
      return next
    },
    async list(board, limit = 50) {
      await tail
      const all = mergeRecords(await readLines())
      return all
        .filter((r) => board === null || r.board === board)
        .reverse()
        .slice(0, limit)
    },
  }
}
