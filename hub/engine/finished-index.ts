// The finished runs' index (hub/engine/README.md, "The run index"): one sorted file per sealed
// segment of the history log (log/index-file.ts), written once when the segment is full, and the
// segment being written held in memory. A page newest first reads the files whose positions and
// (sop, state) pairs can hold its runs, newest first, and stops once no older file can change
// it. Nothing of it goes through LevelDB: there, its four orderings of every run cost more
// bytes than the runs' records (bench/README.md, "endurance").
//
// Everything here is derived from the log: a missing or damaged file is built again from its
// segment, and the segment being written is read back at every open.
import { constants } from 'node:fs'
import { open, readdir, rename, unlink } from 'node:fs/promises'
import { join } from 'node:path'
import type { Level } from 'level'
import type { RunSummary } from '../../sops/hub-engine.ts'
import type { RunState } from '../../sops/run/states.ts'
import {
  INDEX_FILE,
  type IndexEntry,
  type IndexHeader,
  decodeIndexFile,
  decodeIndexHeader,
  encodeIndexFile,
  indexFileName,
  pairKey,
} from './log/index-file.ts'
import type { SegmentLog } from './log/segment-log.ts'
import { flat } from '../memory/flat.ts'
import { T_WIDTH, byPosition, idPosition, position } from './run-index.ts'
import { FIN, RUN, deltaKey, locatorText, parseLocator } from './store-layout.ts'

/** What a page asks of the index (run-index.ts `checkFilter`). */
export interface IndexQuery {
  sop?: string
  state?: RunState
  lower: string
  upper: string
  /** How many positions, at most. */
  want: number
  /** Runs to pass over (the live ones, which the engine's memory answers for). */
  skip: ReadonlySet<string>
}

interface Source {
  seg: number
  min: string
  max: string
  pairs: Iterable<readonly [string, RunState]>
  entries(): Promise<IndexEntry[]>
}

/** The segment being written (and any sealed one whose file could not be written yet). */
interface InMemory {
  entries: IndexEntry[]
  sorted: boolean
  pairs: Map<string, readonly [string, RunState]>
}

/** A sealed segment's file bodies read lately: a page mostly needs the newest one or two. */
const CACHED_FILES = 2
/**
 * How often the bodies kept are looked at: one not used since the last look goes, so a body is
 * kept one to two of these after its last page. A body is about 7 MB of heap at the default
 * 4 MiB segment (112 at 64): a look at the console must not leave that held for good.
 */
export const CACHE_SWEEP_MS = 60_000

/** `recs`: the run's records' locators when LevelDB holds none of them (`IndexEntry.recs`). */
export const entryOf = (summary: RunSummary, fs: number, recs?: readonly string[]): IndexEntry => {
  // Kept as long as the segment is written (about 25,000 at 4 MiB): each string one piece, not
  // a tree of the parts it was made of (hub/memory/flat.ts). A position flat took 139 bytes of
  // heap an entry against 190 (bench/README.md, "endurance: finished runs located by the run
  // index").
  const e: IndexEntry = { pos: flat(position(summary)), sop: summary.sop, state: summary.state, fs }
  if (recs) e.recs = flat(recs.join(' '))
  return e
}

export const idOfPosition = (pos: string) => pos.slice(T_WIDTH + 1)

export class FinishedIndex {
  private memory = new Map<number, InMemory>()
  private files = new Map<number, IndexHeader>()
  /** Each file's size in bytes: history's size counts them with the segments. */
  private sizes = new Map<number, number>()
  private cache = new Map<number, { body: Promise<IndexEntry[]>; used: boolean }>()
  private sweep: NodeJS.Timeout | null = null
  /** `oldest`'s answer from each file it read, while the oldest kept segment stays the same. */
  private firstKept = new Map<number, { from: number; pos: string | null }>()
  private sealing: Promise<void> | null = null
  /** False while `open` reads the log: what is written then, it reads itself. */
  private ready = false

  /** `files`: the log and LevelDB as they are now (a reopen replaces them). */
  constructor(
    private readonly dir: string,
    private readonly stores: () => { log: SegmentLog; db: Level<string, string> },
    private readonly sweepMs = CACHE_SWEEP_MS,
  ) {}

  get opened(): boolean {
    return this.ready
  }

  /** A finished run's summary was appended to segment `seg`. */
  add(seg: number, e: IndexEntry): void {
    if (!this.ready) return
    let m = this.memory.get(seg)
    if (!m) {
      m = { entries: [], sorted: true, pairs: new Map() }
      this.memory.set(seg, m)
    }
    const last = m.entries.at(-1)
    if (last && last.pos > e.pos) m.sorted = false
    m.entries.push(e)
    const k = pairKey(e.sop, e.state)
    if (!m.pairs.has(k)) m.pairs.set(k, [e.sop, e.state])
  }

  /**
   * Writes the file of every segment before `head` still held in memory. Not awaited by the
   * write that filled the segment; one that fails (a full disk) is tried again at the next call.
   */
  sealBefore(head: number): Promise<void> {
    const run = async () => {
      for (const seg of [...this.memory.keys()].filter((s) => s < head).sort((a, b) => a - b)) {
        const m = this.memory.get(seg)!
        const entries = this.sortedOf(m)
        try {
          const { header, size } = await this.writeFile(seg, entries)
          // Dropped by retention meanwhile: the file goes too.
          if (!this.memory.has(seg)) await unlink(join(this.dir, indexFileName(seg))).catch(() => undefined)
          else {
            this.files.set(seg, header)
            this.sizes.set(seg, size)
            this.memory.delete(seg)
          }
        } catch {
          return
        }
      }
    }
    const prev = this.sealing ?? Promise.resolve()
    const next: Promise<void> = prev.then(run).finally(() => {
      if (this.sealing === next) this.sealing = null
    })
    this.sealing = next
    return next
  }

  /** Segment `n` was dropped: its entries go. */
  async drop(n: number): Promise<void> {
    this.memory.delete(n)
    this.cache.delete(n)
    this.firstKept.delete(n)
    this.sizes.delete(n)
    if (this.files.delete(n))
      await unlink(join(this.dir, indexFileName(n))).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'ENOENT') throw err
      })
  }

  /** The bytes of segment `n`'s file (0: none yet), and of all of them. */
  bytesOf(n: number): number {
    return this.sizes.get(n) ?? 0
  }

  bytes(): number {
    let sum = 0
    for (const b of this.sizes.values()) sum += b
    return sum
  }

  /** Up to `q.want` entries newest first, with lower <= position < upper, that match. */
  async page(q: IndexQuery): Promise<IndexEntry[]> {
    const match = (sop: string, state: RunState) =>
      (q.sop === undefined || sop === q.sop) && (q.state === undefined || state === q.state)
    const sources = this.sources()
      .filter((s) => s.min < q.upper && s.max >= q.lower && [...s.pairs].some(([sop, st]) => match(sop, st)))
      .sort((a, b) => byPosition(b.max, a.max))
    const oldestSeg = this.oldestSegment()
    let out: IndexEntry[] = []
    for (const src of sources) {
      if (out.length >= q.want && src.max < out[q.want - 1]!.pos) break
      const entries = await src.entries()
      let i = firstAtOrAbove(entries, q.upper) - 1
      let taken = 0
      for (; i >= 0 && taken < q.want; i--) {
        const e = entries[i]!
        if (e.pos < q.lower) break
        if (!match(e.sop, e.state) || e.fs < oldestSeg || q.skip.has(idOfPosition(e.pos))) continue
        out.push(e)
        taken++
      }
      out.sort((a, b) => byPosition(b.pos, a.pos))
      if (out.length > q.want) out = out.slice(0, q.want)
    }
    return out
  }

  /**
   * The entry of run `id` when the index alone locates its records (`IndexEntry.recs`): found by
   * the position its id gives (run-index.ts `idPosition`). Undefined for any other run.
   */
  async find(id: string): Promise<IndexEntry | undefined> {
    const pos = idPosition(id)
    if (pos === null) return undefined
    const oldestSeg = this.oldestSegment()
    for (const src of this.sources()) {
      if (pos < src.min || pos > src.max) continue
      const entries = await src.entries()
      const e: IndexEntry | undefined = entries[firstAtOrAbove(entries, pos)]
      if (e?.pos === pos && e.recs !== undefined && e.fs >= oldestSeg) return e
    }
    return undefined
  }

  /**
   * Every entry the index alone locates (`IndexEntry.recs`), oldest segment first: the finished
   * runs a whole read of the history (`finished`, a backup) finds nowhere in LevelDB. A file's
   * body is read without being kept.
   */
  async *located(): AsyncGenerator<IndexEntry> {
    const oldestSeg = this.oldestSegment()
    const segs = [...new Set([...this.files.keys(), ...this.memory.keys()])].sort((a, b) => a - b)
    for (const seg of segs) {
      // A copy: the segment being written takes entries while the caller awaits between them.
      for (const e of [...(await this.entriesOf(seg))]) if (e.recs !== undefined && e.fs >= oldestSeg) yield e
    }
  }

  /** The runs segment `n`'s entries alone locate (`IndexEntry.recs`): they go with its file. */
  async ownOf(n: number): Promise<Set<string>> {
    const out = new Set<string>()
    for (const e of await this.entriesOf(n))
      if (e.recs !== undefined && e.fs === n) out.add(idOfPosition(e.pos))
    return out
  }

  /** Segment `seg`'s entries: its file's body read without being kept for pages, or memory's. */
  private async entriesOf(seg: number): Promise<readonly IndexEntry[]> {
    const h = this.files.get(seg)
    if (h) return this.read(seg, h, false)
    const m = this.memory.get(seg)
    return m ? this.sortedOf(m) : []
  }

  /** The creation time of the oldest run the index holds (ms), or null when it holds none. */
  async oldest(): Promise<number | null> {
    const oldestSeg = this.oldestSegment()
    let best: string | null = null
    const sources = this.sources().sort((a, b) => byPosition(a.min, b.min))
    for (const src of sources) {
      if (src.min === '' || (best !== null && src.min >= best)) continue
      const pos = await this.firstKeptOf(src, oldestSeg)
      if (pos !== null && (best === null || pos < best)) best = pos
    }
    return best === null ? null : Number.parseInt(best.slice(0, T_WIDTH), 36)
  }

  /**
   * The first position in `src` whose run's first record the log still keeps. Retention asks at
   * every pass: a file's body is read for it without being cached, and the answer remembered.
   */
  private async firstKeptOf(src: Source, oldestSeg: number): Promise<string | null> {
    const h = this.files.get(src.seg)
    const memo = this.firstKept.get(src.seg)
    if (h && memo?.from === oldestSeg) return memo.pos
    let pos: string | null = null
    for (const e of await this.entriesOf(src.seg))
      if (e.fs >= oldestSeg) {
        pos = e.pos
        break
      }
    if (h) this.firstKept.set(src.seg, { from: oldestSeg, pos })
    return pos
  }

  /**
   * Reads what the folder holds: a file of a sealed segment is kept when its header is whole (a
   * body that fails its check is found when a page reads it, and built again then); a sealed
   * segment without one has it built from the segment, and the segment being written is read
   * into memory. LevelDB must be caught up with the log: it says where each run's first record is.
   */
  async open(): Promise<void> {
    const { log, db } = this.stores()
    await this.forgetAll()
    const head = log.position().seg
    const kept = new Set(log.segments().map((s) => s.n))
    for (const name of await readdir(this.dir)) {
      if (name.endsWith('.idx.tmp')) await unlink(join(this.dir, name)).catch(() => undefined)
      const m = INDEX_FILE.exec(name)
      if (!m) continue
      const n = Number.parseInt(m[1]!, 16)
      const read = kept.has(n) && n !== head ? await readHeader(join(this.dir, name), n) : null
      if (read) {
        this.files.set(n, read.header)
        this.sizes.set(n, read.size)
      } else await unlink(join(this.dir, name)).catch(() => undefined)
    }
    for (const s of log.segments()) {
      if (this.files.has(s.n)) continue
      const entries = await entriesOfSegment(log, s.n, db)
      this.memory.set(s.n, {
        entries,
        sorted: false,
        pairs: new Map(entries.map((e) => [pairKey(e.sop, e.state), [e.sop, e.state] as const])),
      })
    }
    this.ready = true
    await this.sealBefore(head)
  }

  /** Every file removed and nothing held: what `open` then finds, it builds again. */
  async clear(): Promise<void> {
    await this.forgetAll()
    for (const name of await readdir(this.dir).catch(() => [] as string[]))
      if (INDEX_FILE.test(name) || name.endsWith('.idx.tmp'))
        await unlink(join(this.dir, name)).catch(() => undefined)
  }

  async close(): Promise<void> {
    await this.sealing
    if (this.sweep) clearTimeout(this.sweep)
    this.sweep = null
    this.cache.clear()
  }

  /** Holds nothing, and takes nothing in until `open` has read the folder again. */
  private async forgetAll(): Promise<void> {
    this.ready = false
    await this.sealing
    this.memory.clear()
    this.files.clear()
    this.sizes.clear()
    this.cache.clear()
    this.firstKept.clear()
  }

  private sources(): Source[] {
    const out: Source[] = []
    for (const [seg, m] of this.memory) {
      const entries = this.sortedOf(m)
      if (entries.length === 0) continue
      out.push({
        seg,
        min: entries[0]!.pos,
        max: entries.at(-1)!.pos,
        pairs: m.pairs.values(),
        entries: () => Promise.resolve(entries),
      })
    }
    for (const [seg, h] of this.files)
      if (h.count > 0)
        out.push({ seg, min: h.min, max: h.max, pairs: h.pairs, entries: () => this.read(seg, h) })
    return out
  }

  private sortedOf(m: InMemory): IndexEntry[] {
    if (!m.sorted) {
      m.entries.sort((a, b) => byPosition(a.pos, b.pos))
      m.sorted = true
    }
    return m.entries
  }

  /**
   * The oldest segment the log keeps: an entry whose first segment is older stands for a run
   * retention removed (its summary sits in a later segment's file), and is passed over.
   */
  private oldestSegment(): number {
    return this.stores().log.segments()[0]?.n ?? 0
  }

  /** A sealed segment's entries; `keep`: cached for the next page (CACHED_FILES, CACHE_SWEEP_MS). */
  private read(seg: number, header: IndexHeader, keep = true): Promise<IndexEntry[]> {
    const hit = this.cache.get(seg)
    if (hit) {
      // A look that keeps nothing does not keep this one longer either.
      if (keep) {
        this.cache.delete(seg)
        this.cache.set(seg, { body: hit.body, used: true })
      }
      return hit.body
    }
    const p = (async () => {
      try {
        const fh = await open(join(this.dir, indexFileName(seg)), 'r')
        try {
          return decodeIndexFile(await fh.readFile(), header)
        } finally {
          await fh.close()
        }
      } catch {
        // Damaged since the open read its header (or gone): built again from its segment.
        const { log, db } = this.stores()
        const entries = await entriesOfSegment(log, seg, db)
        entries.sort((a, b) => byPosition(a.pos, b.pos))
        const again = await this.writeFile(seg, entries).catch(() => null)
        if (again && this.files.has(seg)) {
          this.files.set(seg, again.header)
          this.sizes.set(seg, again.size)
        }
        return entries
      }
    })()
    if (!keep) return p
    this.cache.set(seg, { body: p, used: true })
    if (this.cache.size > CACHED_FILES) this.cache.delete(this.cache.keys().next().value!)
    p.catch(() => this.cache.delete(seg))
    this.sweepLater()
    return p
  }

  /** Drops the bodies no page used since the last look, looking again while any is kept. */
  private sweepLater(): void {
    if (this.sweep) return
    this.sweep = setTimeout(() => {
      this.sweep = null
      for (const [seg, c] of this.cache)
        if (c.used) c.used = false
        else this.cache.delete(seg)
      if (this.cache.size > 0) this.sweepLater()
    }, this.sweepMs)
    this.sweep.unref()
  }

  /** Written whole under a temporary name, synced, then renamed: a file there is always whole. */
  private async writeFile(
    seg: number,
    entries: readonly IndexEntry[],
  ): Promise<{ header: IndexHeader; size: number }> {
    const bytes = await encodeIndexFile(seg, entries)
    const path = join(this.dir, indexFileName(seg))
    const fh = await open(`${path}.tmp`, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC)
    try {
      await fh.writeFile(bytes)
      await fh.datasync()
    } finally {
      await fh.close()
    }
    await rename(`${path}.tmp`, path)
    return { header: decodeIndexHeader(bytes, seg)!, size: bytes.length }
  }
}

/** The index of the first entry at or above `pos` (entries ascending). */
function firstAtOrAbove(entries: readonly IndexEntry[], pos: string): number {
  let lo = 0
  let hi = entries.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (entries[mid]!.pos < pos) lo = mid + 1
    else hi = mid
  }
  return lo
}

async function readHeader(path: string, seg: number): Promise<{ header: IndexHeader; size: number } | null> {
  let fh: Awaited<ReturnType<typeof open>> | null = null
  try {
    fh = await open(path, 'r')
    const buf = Buffer.alloc(64 * 1024)
    const { bytesRead } = await fh.read(buf, 0, buf.length, 0)
    const header = decodeIndexHeader(buf.subarray(0, bytesRead), seg)
    return header ? { header, size: (await fh.stat()).size } : null
  } catch {
    return null
  } finally {
    await fh?.close().catch(() => undefined)
  }
}

/**
 * The finished runs whose summary segment `n` holds, each with the segment of its first record
 * (LevelDB's locator of it). A run LevelDB holds nothing of has its first record in `n` too
 * (store-writes.ts `indexOwn`): its entry gets its records' locators from the scan. A run whose
 * first record is gone was removed, and is left out.
 */
async function entriesOfSegment(
  log: SegmentLog,
  n: number,
  db: Level<string, string>,
): Promise<IndexEntry[]> {
  const summaries = new Map<string, { s: RunSummary; at: string }>()
  // The records of each run whose first record is in this segment, by their number.
  const records = new Map<string, (string | undefined)[]>()
  for (const b of await log.scan(n))
    for (const { op, off, len, inner } of b.ops) {
      if (op.type === 'put' && op.key.startsWith(FIN)) {
        const s = JSON.parse(op.value) as RunSummary
        summaries.set(s.id, { s, at: locatorText(n, off, len, inner) })
      } else if (op.key.startsWith(RUN)) {
        const bang = op.key.lastIndexOf('!')
        const id = op.key.slice(RUN.length, bang)
        const seq = Number.parseInt(op.key.slice(bang + 1), 36)
        let recs = records.get(id)
        if (!recs) {
          if (seq !== 0 || op.type !== 'put') continue
          recs = []
          records.set(id, recs)
        }
        recs[seq] = op.type === 'put' ? locatorText(n, off, len, inner) : undefined
      }
    }
  const runs = [...summaries.values()]
  const out: IndexEntry[] = []
  for (let c = 0; c < runs.length; c += 1024) {
    const chunk = runs.slice(c, c + 1024)
    const firsts = await db.getMany(chunk.map(({ s }) => deltaKey(s.id, 0)))
    chunk.forEach(({ s, at }, i) => {
      const loc = firsts[i]
      const recs = records.get(s.id)
      if (loc?.startsWith('@')) out.push(entryOf(s, parseLocator(loc).seg))
      else if (loc === undefined && recs?.[0] !== undefined)
        out.push(entryOf(s, n, [...recs.filter((r): r is string => r !== undefined), at]))
    })
  }
  return out
}
