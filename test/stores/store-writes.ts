// Records written into the hub's stores through the code the hub writes them with, and read back
// the same way, for the power-cut and repair tests: engine runs (hub/engine/store.ts), the
// embedded broker's retained messages (aedes-persistence-level over batched-db.ts over the
// reopenable LevelDB), attestation lines (hub/attest/store.ts).
import { cp, readdir, stat } from 'node:fs/promises'
import { join } from 'node:path'
// @ts-expect-error aedes-persistence-level ships no types: (db: Level) => persistence
import aedesPersistenceLevel from 'aedes-persistence-level'
import { Level } from 'level'
import { openAttestStore, type AppendInput } from '../../hub/attest/store.ts'
import { batchedDb, type LevelLike } from '../../hub/broker/batched-db.ts'
import { openReopenable } from '../../hub/disk/reopenable-level.ts'
import type { EngineStore } from '../../hub/engine/store.ts'
import { summary } from '../../hub/engine/summary.ts'
import { HUB_LEVELDB_SIZES } from '../../hub/leveldb.ts'
import { lineHash } from '../../records/hash.ts'
import { newRun, type RunRecord } from '../../sops/run/record.ts'

const T0 = Date.UTC(2026, 0, 5)

/** The file of `dir` matching `re` with the highest number in its name: the newest log. */
export async function newest(dir: string, re: RegExp): Promise<string> {
  const names = (await readdir(dir)).filter((n) => re.test(n)).sort()
  if (names.length === 0) throw new Error(`no file like ${re} in ${dir}`)
  return join(dir, names.at(-1)!)
}

export const LEVEL_LOG = /^\d{6}\.log$/
export const SEGMENT = /^[0-9a-f]{8}\.seg$/

export const size = async (file: string): Promise<number> => (await stat(file)).size

export async function copyDir(from: string, to: string): Promise<void> {
  await cp(from, to, { recursive: true })
}

/** One engine write: a run started (pending) or finished (completed). */
export interface EngineWrite {
  id: string
  finish: boolean
}

export function engineRun(i: number): RunRecord {
  return newRun({
    id: `run-${String(i).padStart(4, '0')}`,
    sop: i % 2 === 0 ? 'press' : 'pump',
    mode: 'supervised',
    trigger: { type: 'mqtt', source: `in/${i}`, payload: `{"v":${i}}`, at: T0 + i },
    first: 1,
    now: T0 + i,
    admission: 'started',
  })
}

/**
 * Starts `runs` runs and finishes every other one as it goes, one synced write each; `after` is
 * told of each write once the store acknowledged it.
 */
export async function writeEngine(
  store: EngineStore,
  runs: number,
  after: (w: EngineWrite) => Promise<void> = async () => {},
): Promise<EngineWrite[]> {
  const writes: EngineWrite[] = []
  const open: RunRecord[] = []
  for (let i = 0; i < runs; i++) {
    const run = engineRun(i)
    await store.write(store.runOps(run))
    writes.push({ id: run.id, finish: false })
    await after(writes.at(-1)!)
    open.push(run)
    if (i % 2 === 1) {
      const done = open.shift()!
      done.state = 'completed'
      done.updatedAt += 1
      await store.write(store.finishOps(done, summary(done)))
      store.forget(done.id)
      writes.push({ id: done.id, finish: true })
      await after(writes.at(-1)!)
    }
  }
  return writes
}

/** What of `writes` the store does not show: none when every one of them is there. */
export async function missingEngine(store: EngineStore, writes: readonly EngineWrite[]): Promise<string[]> {
  const want = new Map<string, 'pending' | 'completed'>()
  for (const w of writes) want.set(w.id, w.finish ? 'completed' : 'pending')
  const missing: string[] = []
  const listed = new Set<string>()
  for (let cursor: string | undefined, first = true; first || cursor !== undefined; first = false) {
    const page = await store.queryRuns(cursor === undefined ? { limit: 1000 } : { limit: 1000, cursor })
    for (const r of page.runs) listed.add(r.id)
    cursor = page.next ?? undefined
  }
  for (const [id, state] of want) {
    const run = await store.getRun(id)
    if (run?.state !== state) missing.push(`${id} ${state} (read ${run?.state ?? 'nothing'})`)
    else if (!listed.has(id)) missing.push(`${id} not listed`)
  }
  return missing
}

/** The broker's LevelDB as the embedded broker opens and wraps it (hub/broker/broker.ts). */
export async function openBrokerPersistence(path: string) {
  const level = await openReopenable(
    () => new Level<string, Buffer>(path, { valueEncoding: 'buffer', ...HUB_LEVELDB_SIZES }),
  )
  const db = batchedDb(level as LevelLike)
  const p = aedesPersistenceLevel(db) as unknown as {
    storeRetained(packet: object): Promise<void>
    createRetainedStream(pattern: string): AsyncIterable<{ topic: string; payload: Buffer }>
  }
  return {
    // Without a callback the persistence's promise is returned (the broker's calls wait for
    // its setup, which needs a broker; a retained message does not).
    store: (topic: string, payload: string) =>
      p.storeRetained({
        cmd: 'publish',
        topic,
        payload: Buffer.from(payload),
        qos: 1,
        retain: true,
        dup: false,
        length: 0,
      }),
    async retained(): Promise<Map<string, string>> {
      const out = new Map<string, string>()
      for await (const m of p.createRetainedStream('#')) out.set(m.topic, Buffer.from(m.payload).toString())
      return out
    },
    close: () => db.close().then(() => level.close()),
  }
}

export const attestInput = (i: number): AppendInput => ({
  idempotencyKey: `line-${i}`,
  action: 'a',
  requestUri: `svc://test/${i}`,
  line: `{"i":${i}}`,
  paramsHash: lineHash(`{"i":${i}}`),
  signature: `0x${'11'.repeat(65)}`,
  signer: '0x0000000000000000000000000000000000000001',
})

/** The idempotency keys of the lines an attestation store holds. */
export async function attestKeys(path: string): Promise<Set<string>> {
  const store = await openAttestStore(path)
  const out = new Set<string>()
  try {
    for await (const r of store.range()) out.add(r.idempotencyKey)
  } finally {
    await store.close()
  }
  return out
}
