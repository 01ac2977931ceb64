// The attestation store: LevelDB, every write a `sync` batch (hub/DESIGN.md, "Durable
// writes"). Appends from concurrent steps are group-committed: whatever arrives while one
// batch is being fsynced goes into the next batch together, so many steps share one fsync
// and none reports success before its line is on disk (sops/RUNTIME.md, "Attested lines").
//
// Keys: m:* metadata, l:<seq> records, k:<idempotencyKey> → seq, q:<seq> the sync queue
// (lines not yet attested or failed), in seq order, f:<seq> the failed lines (kept for ever and
// rare, so the console lists them with their reasons without reading every line).
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { Level } from 'level'
import type { Hex } from 'viem'
import { requestHashFor } from '../../records/request-hash.ts'
import {
  type AttestCounts,
  type AttestRecord,
  type AttestState,
  type SavedSend,
  emptyCounts,
} from './record.ts'
import { CHAIN_ID } from '../../chain/chain-id.ts'
import { isStoreIoError } from '../disk/errors.ts'

/** What the tool hands the store; the store assigns seq, requestHash, createdAt and state. */
export type AppendInput = Pick<
  AttestRecord,
  'idempotencyKey' | 'action' | 'requestUri' | 'line' | 'paramsHash' | 'signature' | 'signer'
>

export interface AppendResult {
  record: AttestRecord
  /** false: the key was already stored; nothing was written. */
  created: boolean
}

export interface AttestStore {
  readonly storeId: Hex
  readonly chainId: number
  append(input: AppendInput): Promise<AppendResult>
  byIdempotencyKey(key: string): Promise<AttestRecord | undefined>
  get(seq: number): Promise<AttestRecord | undefined>
  /** Records with from ≤ seq < to, in order. */
  range(from?: number, to?: number): AsyncIterable<AttestRecord>
  /** The first `limit` records from `fromSeq` on not yet attested or failed, in seq order. */
  queue(limit: number, fromSeq?: number): Promise<AttestRecord[]>
  /** The first `limit` failed records from `fromSeq` on, in seq order (each with its `error`). */
  failed(limit: number, fromSeq?: number): Promise<AttestRecord[]>
  /**
   * Replaces records (state changes by the sync), in one sync batch; with `send`, also saves a
   * batched request transaction (`put`) or forgets one by nonce (`del`) in that same batch.
   */
  update(records: AttestRecord[], send?: { put?: SavedSend; del?: number }): Promise<void>
  /** Batched request transactions saved and not yet settled, by nonce. */
  sends(): Promise<SavedSend[]>
  counts(): AttestCounts
  size(): number
  /** The chain the lines' states refer to (sync's mark: genesis hash and registry), once one was met. */
  chainMark(): string | undefined
  /**
   * Sync met another chain than the marked one (or, with `force`, one that lacks rows the store
   * counts as attested): every line goes back to `pending` and `mark` is kept, in one sync batch.
   * With no mark yet and no `force`, only the mark is written. Resolves to how many lines went back.
   */
  rebase(mark: string, opts?: { force?: boolean }): Promise<number>
  /** Told of each write LevelDB failed with an I/O error (a full disk), once per failed batch. */
  onWriteError(fn: (err: unknown) => void): void
  /**
   * Closes the database and opens it again (LevelDB refuses writes after one failed until then),
   * reading its counters back as an open does: a batch reported failed may be on disk after all.
   */
  reopen(): Promise<void>
  /** Every entry as bytes, from one snapshot, for a backup (hub/backup/). */
  entries(): AsyncIterable<[Buffer, Buffer]>
  close(): Promise<void>
}

type Db = Level<string, unknown>
const pad = (n: number) => n.toString().padStart(12, '0')
const lineKey = (seq: number) => `l:${pad(seq)}`
/** Whether a key as a backup archive carries it is a line's (`lineKey`): a restore counts them. */
export const isLineKey = (key: Buffer): boolean => key.toString('latin1', 0, 2) === 'l:'
const queueKey = (seq: number) => `q:${pad(seq)}`
const idemKey = (k: string) => `k:${k}`
const sendKey = (nonce: number) => `s:${pad(nonce)}`
const failedKey = (seq: number) => `f:${pad(seq)}`
const inQueue = (s: AttestState) => s === 'pending' || s === 'sending' || s === 'requested'

type Job =
  | { kind: 'append'; input: AppendInput; resolve: (r: AppendResult) => void; reject: (e: unknown) => void }
  | {
      kind: 'update'
      records: AttestRecord[]
      send?: { put?: SavedSend; del?: number }
      resolve: () => void
      reject: (e: unknown) => void
    }
  | {
      kind: 'rebase'
      mark: string
      force: boolean
      resolve: (n: number) => void
      reject: (e: unknown) => void
    }

export interface OpenOptions {
  chainId?: number
}

export async function openAttestStore(dbPath: string, opts: OpenOptions = {}): Promise<AttestStore> {
  let db: Db = new Level<string, unknown>(dbPath, { valueEncoding: 'json' })
  await db.open()
  const chainId = opts.chainId ?? CHAIN_ID

  let storeId = (await db.get('m:storeId')) as Hex | undefined
  if (storeId === undefined) {
    storeId = `0x${randomBytes(32).toString('hex')}`
    await db.put('m:storeId', storeId, { sync: true })
  }
  let next = ((await db.get('m:next')) as number | undefined) ?? 0
  let counts: AttestCounts = ((await db.get('m:counts')) as AttestCounts | undefined) ?? emptyCounts()
  let mark = (await db.get('m:chain')) as string | undefined
  // A store written before the failed index: index its failed lines once.
  if ((await db.get('m:failedIndex')) === undefined) {
    const ops = db.batch()
    if (counts.failed > 0)
      for await (const v of db.values({ gte: lineKey(0), lt: 'l;' }))
        if ((v as AttestRecord).state === 'failed') ops.put(failedKey((v as AttestRecord).seq), 1)
    ops.put('m:failedIndex', 1)
    await ops.write({ sync: true })
  }
  const id: Hex = storeId

  const jobs: Job[] = []
  let flushing = false
  let closed = false
  let onWriteError: ((err: unknown) => void) | null = null
  // A write that failed with an I/O error: every batch fails with it until the store is opened
  // again (LevelDB may take later writes into a torn log and drop them at the next open).
  let broken: unknown = null
  // While the database is opened again: the batches wait for it.
  let reopening: Promise<void> | null = null
  // Appends accepted but not yet on disk, so a concurrent duplicate key joins the first one.
  const inflight = new Map<string, Promise<AppendResult>>()

  async function flush(): Promise<void> {
    // A reopen flushes what waits once the database is open again.
    if (flushing || reopening) return
    flushing = true
    try {
      while (jobs.length > 0 && !reopening) {
        if (broken !== null) {
          // The disk guard reopens the store once there is room; without one, the next batch does.
          if (onWriteError) {
            for (const job of jobs.splice(0, jobs.length)) job.reject(broken)
            break
          }
          try {
            await reopenDb()
          } catch (err) {
            for (const job of jobs.splice(0, jobs.length)) job.reject(err)
            break
          }
        }
        const batch = jobs.splice(0, jobs.length)
        const ops = db.batch()
        const touched = new Map<number, AttestRecord>()
        const newCounts = { ...counts }
        let newNext = next
        let newMark = mark
        const done: (() => void)[] = []
        // Existence of idempotency keys is checked before queuing (see append), so here every
        // append job is new.
        for (const job of batch) {
          if (job.kind === 'append') {
            const seq = newNext++
            const rec: AttestRecord = {
              seq,
              ...job.input,
              requestHash: requestHashFor({ chainId, storeId: id, seq, paramsHash: job.input.paramsHash }),
              createdAt: new Date().toISOString(),
              state: 'pending',
            }
            ops.put(lineKey(seq), rec)
            ops.put(idemKey(job.input.idempotencyKey), seq)
            ops.put(queueKey(seq), 1)
            touched.set(seq, rec)
            newCounts.total++
            newCounts.pending++
            done.push(() => job.resolve({ record: rec, created: true }))
          } else if (job.kind === 'rebase') {
            let back = 0
            if (job.force || (newMark !== undefined && newMark !== job.mark)) {
              for await (const v of db.values({ gte: lineKey(0), lt: 'l;' })) {
                const old = touched.get((v as AttestRecord).seq) ?? (v as AttestRecord)
                if (old.state === 'pending') continue
                const { requestTx: _tx, responseTx: _rx, error: _e, ...rest } = old
                const rec: AttestRecord = { ...rest, state: 'pending' }
                newCounts[old.state]--
                newCounts.pending++
                ops.put(lineKey(rec.seq), rec)
                ops.put(queueKey(rec.seq), 1)
                if (old.state === 'failed') ops.del(failedKey(rec.seq))
                touched.set(rec.seq, rec)
                back++
              }
            }
            // Transactions saved for another chain mean nothing on this one.
            if (job.force || (newMark !== undefined && newMark !== job.mark))
              for await (const k of db.keys({ gte: 's:', lt: 's;' })) ops.del(k)
            newMark = job.mark
            ops.put('m:chain', job.mark)
            done.push(() => job.resolve(back))
          } else {
            for (const rec of job.records) {
              const old =
                touched.get(rec.seq) ?? ((await db.get(lineKey(rec.seq))) as AttestRecord | undefined)
              if (!old) {
                job.reject(new Error(`attest store: no record ${rec.seq}`))
                continue
              }
              newCounts[old.state]--
              newCounts[rec.state]++
              ops.put(lineKey(rec.seq), rec)
              touched.set(rec.seq, rec)
              if (!inQueue(rec.state)) ops.del(queueKey(rec.seq))
              if (rec.state === 'failed') ops.put(failedKey(rec.seq), 1)
              else if (old.state === 'failed') ops.del(failedKey(rec.seq))
            }
            if (job.send?.put) ops.put(sendKey(job.send.put.nonce), job.send.put)
            if (job.send?.del !== undefined) ops.del(sendKey(job.send.del))
            done.push(() => job.resolve())
          }
        }
        ops.put('m:next', newNext)
        ops.put('m:counts', newCounts)
        try {
          await ops.write({ sync: true })
        } catch (err) {
          if (isStoreIoError(err)) {
            broken = err
            onWriteError?.(err)
          }
          for (const job of batch) job.reject(err)
          continue
        }
        next = newNext
        counts = newCounts
        mark = newMark
        for (const d of done) d()
      }
    } finally {
      flushing = false
    }
  }

  /** Opens the database again and reads its counters back, as an open does. */
  async function reopenDb(): Promise<void> {
    await db.close().catch(() => undefined)
    db = new Level<string, unknown>(dbPath, { valueEncoding: 'json' })
    await db.open()
    broken = null
    next = ((await db.get('m:next')) as number | undefined) ?? 0
    counts = ((await db.get('m:counts')) as AttestCounts | undefined) ?? emptyCounts()
    mark = (await db.get('m:chain')) as string | undefined
  }

  function enqueue(job: Job): void {
    if (closed) {
      job.reject(new Error('attest store is closed'))
      return
    }
    jobs.push(job)
    void flush()
  }

  async function byIdempotencyKey(key: string): Promise<AttestRecord | undefined> {
    const seq = (await db.get(idemKey(key))) as number | undefined
    if (seq === undefined) return undefined
    return (await db.get(lineKey(seq))) as AttestRecord | undefined
  }

  const store: AttestStore = {
    storeId: id,
    chainId,
    append(input) {
      if (closed) return Promise.reject(new Error('attest store is closed'))
      const pending = inflight.get(input.idempotencyKey)
      if (pending) return pending.then((r) => ({ record: r.record, created: false }))
      const p = (async (): Promise<AppendResult> => {
        const existing = await byIdempotencyKey(input.idempotencyKey)
        if (existing) return { record: existing, created: false }
        return new Promise<AppendResult>((resolve, reject) =>
          enqueue({ kind: 'append', input, resolve, reject }),
        )
      })()
      inflight.set(input.idempotencyKey, p)
      const clear = () => inflight.delete(input.idempotencyKey)
      p.then(clear, clear)
      return p
    },
    byIdempotencyKey,
    async get(seq) {
      return (await db.get(lineKey(seq))) as AttestRecord | undefined
    },
    async *range(from = 0, to = Number.MAX_SAFE_INTEGER) {
      if (to <= from) return
      for await (const v of db.values({ gte: lineKey(from), lt: lineKey(Math.min(to, 1e12 - 1)) }))
        yield v as AttestRecord
    },
    async queue(limit, fromSeq = 0) {
      const out: AttestRecord[] = []
      for await (const k of db.keys({ gte: queueKey(fromSeq), lt: 'q;', limit })) {
        const rec = (await db.get(`l:${k.slice(2)}`)) as AttestRecord | undefined
        if (rec) out.push(rec)
      }
      return out
    },
    async failed(limit, fromSeq = 0) {
      const out: AttestRecord[] = []
      for await (const k of db.keys({ gte: failedKey(fromSeq), lt: 'f;', limit })) {
        const rec = (await db.get(`l:${k.slice(2)}`)) as AttestRecord | undefined
        if (rec) out.push(rec)
      }
      return out
    },
    update(records, send) {
      if (records.length === 0 && !send) return Promise.resolve()
      return new Promise<void>((resolve, reject) =>
        enqueue({ kind: 'update', records, ...(send ? { send } : {}), resolve, reject }),
      )
    },
    async sends() {
      const out: SavedSend[] = []
      for await (const v of db.values({ gte: 's:', lt: 's;' })) out.push(v as SavedSend)
      return out
    },
    counts: () => ({ ...counts }),
    chainMark: () => mark,
    rebase(m, o) {
      return new Promise<number>((resolve, reject) =>
        enqueue({ kind: 'rebase', mark: m, force: o?.force === true, resolve, reject }),
      )
    },
    size: () => next,
    onWriteError(fn) {
      onWriteError = fn
    },
    async reopen() {
      let done = (): void => undefined
      reopening = new Promise<void>((resolve) => (done = resolve))
      try {
        // The batch being written finishes (or fails) first; the next ones wait for `reopening`.
        while (flushing) await new Promise((r) => setTimeout(r, 5))
        await reopenDb()
      } finally {
        reopening = null
        done()
        if (jobs.length > 0) void flush()
      }
    },
    async *entries() {
      // Read under a reopen would meet a closed handle: wait one out first (a full disk's).
      while (reopening) await reopening
      yield* db.iterator({ keyEncoding: 'buffer', valueEncoding: 'buffer' }) as AsyncIterable<
        [Buffer, Buffer]
      >
    },
    async close() {
      closed = true
      while (flushing || jobs.length > 0) await new Promise((r) => setTimeout(r, 5))
      await db.close()
    },
  }
  return store
}

/** Where the hub and `svc attest` keep the store: <SVC_HOME>/data/attest. */
export function attestStorePath(dataDir: string): string {
  return join(dataDir, 'attest')
}
