// A LevelDB the hub can close and open again while its user holds on to it: the embedded
// broker's persistence (aedes-persistence-level, through batched-db.ts) keeps one database
// object for its whole life, and after a write failed (a full disk) LevelDB either refuses every
// later write or, worse, takes them into a log whose torn record makes it drop them at the next
// open: acknowledged and lost. So after a write fails every write fails until the database is
// opened again. Calls wait while it reopens; the failure is reported once (the disk guard then
// refuses work and reopens it once there is room; without a listener the next write reopens it).
import type { Level } from 'level'
import { chainedBatch, type LevelLike, type Op } from '../broker/batched-db.ts'

/** The members used here, with abstract-level's option types loosened to what callers pass. */
interface Db {
  open(): Promise<void>
  close(): Promise<void>
  get(key: string, opts?: object): Promise<Buffer | undefined>
  put(key: string, value: Buffer, opts?: object): Promise<void>
  del(key: string, opts?: object): Promise<void>
  batch(): { put(key: string, value: Buffer): void; del(key: string): void; write(): Promise<void> }
  values(opts?: object): AsyncIterable<Buffer>
  iterator(opts?: object): AsyncIterable<[Buffer, Buffer]>
  clear(range: object): Promise<void>
}

/** What aedes-persistence-level and batched-db.ts use, and a way to open the database again. */
export interface ReopenableLevel extends LevelLike {
  /** Closes the database and opens it again; calls made meanwhile wait. */
  reopen(): Promise<void>
  /** Every entry as bytes, from one snapshot (a backup, hub/backup/). */
  entries(): AsyncIterable<[Buffer, Buffer]>
}

const isIoError = (err: unknown): boolean => (err as { code?: unknown } | null)?.code === 'LEVEL_IO_ERROR'

/** Opens `make()`'s database; `onWriteError` hears of each write that failed with an I/O error. */
export async function openReopenable(
  make: () => Level<string, Buffer>,
  onWriteError?: (err: unknown) => void,
): Promise<ReopenableLevel> {
  const fresh = (): Db => make() as unknown as Db
  let db = fresh()
  await db.open()
  let reopening: Promise<void> | null = null
  // Calls under way on the current handle: a reopen closes it only once they are done.
  let busy = 0
  let idle: (() => void) | null = null
  let broken: unknown = null

  // Counted from the moment the handle is taken, with no await in between, so a reopen that
  // starts meanwhile waits for the call rather than close the handle under it.
  const use = async <T>(fn: (d: Db) => Promise<T>, writes: boolean): Promise<T> => {
    while (reopening) await reopening
    if (writes && broken !== null) {
      if (onWriteError) throw broken
      await self.reopen()
      return use(fn, writes)
    }
    busy++
    try {
      return await fn(db)
    } catch (err) {
      if (writes && isIoError(err) && broken === null) {
        broken = err
        onWriteError?.(err)
      }
      throw err
    } finally {
      if (--busy === 0) idle?.()
    }
  }
  async function* held<T>(it: (d: Db) => AsyncIterable<T>): AsyncGenerator<T> {
    while (reopening) await reopening
    busy++
    try {
      yield* it(db)
    } finally {
      if (--busy === 0) idle?.()
    }
  }
  const write = (fn: (d: Db) => Promise<void>): Promise<void> => use(fn, true)
  const apply = (d: Db, ops: readonly Op[]): Promise<void> => {
    const b = d.batch()
    for (const op of ops) {
      if (op.type === 'put') b.put(op.key, op.value as Buffer)
      else b.del(op.key)
    }
    return b.write()
  }

  const self: ReopenableLevel = {
    get: (key, opts) => use((d) => d.get(key, opts), false),
    put: (key, value, opts) => write((d) => d.put(key, value, opts)),
    del: (key, opts) => write((d) => d.del(key, opts)),
    batch(ops?: Op[]) {
      const all = (list: Op[]) => write((d) => apply(d, list))
      return ops ? all(ops) : chainedBatch(all)
    },
    values(opts) {
      // An iteration holds the handle until it ends: a reopen waits for it.
      return held((d) => d.values(opts))
    },
    entries() {
      return held((d) => d.iterator({ keyEncoding: 'buffer', valueEncoding: 'buffer' }))
    },
    clear: (range) => write((d) => d.clear(range ?? {})),
    close: () => use((d) => d.close(), false),
    async reopen() {
      let done = (): void => undefined
      const gate = new Promise<void>((resolve) => (done = resolve))
      while (reopening) await reopening
      reopening = gate
      try {
        // Calls under way finish (or fail) on the old handle first.
        if (busy > 0) await new Promise<void>((resolve) => (idle = resolve))
        idle = null
        await db.close().catch(() => undefined)
        db = fresh()
        await db.open()
        broken = null
      } finally {
        reopening = null
        done()
      }
    },
  }
  return self
}
