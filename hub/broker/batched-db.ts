// The embedded broker's LevelDB, as aedes-persistence-level sees it, with its writes coalesced.
//
// aedes-persistence-level makes each write its own LevelDB job and reads back what it has just
// written: a QoS 1 message to a persistent session costs four puts, two gets and a batch (the
// offline enqueue, the same enqueue again on delivery, the outgoing update's read and two puts,
// the PUBACK's read and two deletes). Each job is a trip through libuv's thread pool and LevelDB's
// writer queue, and together they were a quarter of the hub's main-thread time in a burst
// (bench/README.md, peer). Here every write made in one turn of the event loop goes into one
// LevelDB batch, and the values written are kept in memory, so the reads that follow them are
// answered without a LevelDB job.
//
// Durability is unchanged: a write is reported done when the batch holding it is written,
// without sync, as each single write was before (the WAL is in the OS's cache: it survives the
// process being killed, not the machine losing power). The broker acknowledges a publish only
// after its write is reported done, so it still acknowledges only what the log holds.

/** The value a read gets for a key written and not yet deleted (null: deleted). */
type Cached = Buffer | null

export interface Op {
  type: 'put' | 'del'
  key: string
  value?: Buffer
}

/** The members of abstract-level's API that aedes-persistence-level 9 uses. */
export interface LevelLike {
  get(key: string, opts?: object): Promise<Buffer | undefined>
  put(key: string, value: Buffer, opts?: object): Promise<void>
  del(key: string, opts?: object): Promise<void>
  batch(ops?: Op[], opts?: object): unknown
  values(opts?: object): AsyncIterable<Buffer>
  clear(range?: object): Promise<void>
  close(): Promise<void>
}

export interface BatchedStats {
  /** LevelDB batches written, and the operations in them. */
  batches: number
  ops: number
  /** Reads answered from memory, and reads that went to LevelDB. */
  hits: number
  misses: number
}

/** Values kept after their batch is written, beyond which the flushed ones are let go. */
/** abstract-level's chained batch (`db.batch().put(…).del(…).write()`), gathered into one list of ops. */
export function chainedBatch(write: (ops: Op[]) => Promise<void>) {
  const list: Op[] = []
  const chained = {
    put(key: string, value: Buffer) {
      list.push({ type: 'put', key, value })
      return chained
    },
    del(key: string) {
      list.push({ type: 'del', key })
      return chained
    },
    write: () => write(list),
    close: async () => {},
  }
  return chained
}

export const MAX_CACHED = 50_000

/**
 * Wraps `db` (a Level opened with valueEncoding 'buffer') so that writes are coalesced per turn of
 * the event loop and recently written values are read from memory. Iterators and clear() first
 * wait for every write made before them.
 */
export function batchedDb<D extends LevelLike>(db: D): D & { stats: BatchedStats } {
  const stats: BatchedStats = { batches: 0, ops: 0, hits: 0, misses: 0 }
  // What a read must see: every write made so far, unless let go after being written.
  const cache = new Map<string, Cached>()
  let pending = new Map<string, Op>()
  let waiters: { resolve: () => void; reject: (e: unknown) => void }[] = []
  let scheduled = false
  let writing: Promise<void> | null = null

  const flush = async (): Promise<void> => {
    scheduled = false
    // One batch at a time; what arrives meanwhile goes into the next one.
    while (writing) await writing.catch(() => undefined)
    if (pending.size === 0) return
    const ops = pending
    const told = waiters
    pending = new Map()
    waiters = []
    writing = (async () => {
      const batch = db.batch() as {
        put(k: string, v: Buffer): void
        del(k: string): void
        write(): Promise<void>
      }
      for (const op of ops.values()) {
        if (op.type === 'put') batch.put(op.key, op.value as Buffer)
        else batch.del(op.key)
      }
      await batch.write()
    })()
    try {
      await writing
      stats.batches++
      stats.ops += ops.size
      // A key deleted and not written since is LevelDB's to answer now: keeping its null would
      // fill the cache with every message ever acknowledged, and each time that reached
      // MAX_CACHED the values of messages still in flight were let go with them.
      for (const [k, op] of ops) if (op.type === 'del' && cache.get(k) === null) cache.delete(k)
      for (const w of told) w.resolve()
    } catch (err) {
      // What those writes left on disk is unknown: reads go to LevelDB again.
      for (const k of ops.keys()) cache.delete(k)
      for (const w of told) w.reject(err)
    } finally {
      writing = null
    }
    if (cache.size > MAX_CACHED) {
      cache.clear()
      for (const op of pending.values()) cache.set(op.key, op.type === 'put' ? (op.value as Buffer) : null)
    }
  }

  const write = (list: Op[]): Promise<void> => {
    for (const op of list) {
      // The last write of a key wins, as it would in LevelDB.
      pending.delete(op.key)
      pending.set(op.key, op)
      cache.set(op.key, op.type === 'put' ? (op.value as Buffer) : null)
    }
    const done = new Promise<void>((resolve, reject) => waiters.push({ resolve, reject }))
    if (!scheduled) {
      scheduled = true
      setImmediate(() => void flush())
    }
    return done
  }

  /** Resolves once every write made so far is in LevelDB. */
  const settled = async (): Promise<void> => {
    while (pending.size > 0 || writing) {
      if (writing) await writing.catch(() => undefined)
      else await flush()
    }
  }

  const own = {
    stats,
    async get(key: string, opts?: object): Promise<Buffer | undefined> {
      const c = cache.get(key)
      if (c !== undefined) {
        stats.hits++
        return c ?? undefined
      }
      stats.misses++
      return db.get(key, opts)
    },
    put: (key: string, value: Buffer): Promise<void> => write([{ type: 'put', key, value }]),
    del: (key: string): Promise<void> => write([{ type: 'del', key }]),
    batch(ops?: Op[]): unknown {
      return ops ? write(ops) : chainedBatch(write)
    },
    values(opts?: object): AsyncIterable<Buffer> {
      return (async function* () {
        await settled()
        yield* db.values(opts)
      })()
    },
    async clear(range?: object): Promise<void> {
      await settled()
      // Which cached keys the range covers is LevelDB's business: forget them all.
      cache.clear()
      await db.clear(range)
    },
    async close(): Promise<void> {
      await settled()
      await db.close()
    },
  }
  return new Proxy(db, {
    get(target, key, receiver) {
      if (Object.hasOwn(own, key)) return own[key as keyof typeof own]
      return Reflect.get(target, key, receiver)
    },
  }) as D & { stats: BatchedStats }
}
