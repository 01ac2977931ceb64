// A power cut, as the disk keeps it: every byte written before the last sync, and any part of what
// came after. Each store is written through the hub's own code and closed; its newest log file is
// cut at random offsets (a fresh copy each time) and reopened: it opens, the torn tail dropped,
// and every record synced before the cut is there (hub/stores/README.md, "Repair").
// - The engine's history log: every batch is synced before LevelDB points at it, so what can be
//   lost is the batch being written: the log is cut between its last sync and the end of the
//   next batch. Its LevelDB is written without a sync: its log is cut anywhere.
// - The LevelDB stores (broker, attestation): cut anywhere after the length the log had when a
//   chosen write was done, which checks more than the last sync: whatever the cut, every write
//   whose bytes are all before it is there.
// The seed is printed: POWER_CUT_SEED=<seed> repeats a run.
import { appendFile, readFile, truncate } from 'node:fs/promises'
import { join } from 'node:path'
import { Level } from 'level'
import t from 'tap'
import { seeded } from '../helpers/seeded.ts'
import { openAttestStore } from '../../hub/attest/store.ts'
import { DEFAULT_BOUNDS, EngineStore } from '../../hub/engine/store.ts'
import { tempDir } from '../helpers/tmp.ts'
import {
  LEVEL_LOG,
  SEGMENT,
  attestInput,
  attestKeys,
  copyDir,
  engineRun,
  missingEngine,
  newest,
  openBrokerPersistence,
  size,
  writeEngine,
} from './store-writes.ts'

const seed = Number(process.env.POWER_CUT_SEED ?? Math.floor(Math.random() * 2 ** 32))
t.comment(`power-cut seed ${seed} (POWER_CUT_SEED=${seed} repeats this run)`)
const random = seeded(seed)
/** A whole number from lo to hi, both included. */
const between = (lo: number, hi: number): number => lo + Math.floor(random() * (hi - lo + 1))
const CUTS = 8

/** A write done: the records written by then, and the newest log's length then. */
interface Synced {
  records: number
  file: string
  length: number
}

/** A write done in the newest log file, and an offset at or after its length then. */
function cutAfterSync(points: readonly Synced[], file: string, end: number): { at: Synced; offset: number } {
  const inFile = points.filter((p) => p.file === file)
  const at = inFile[between(0, inFile.length - 1)]!
  return { at, offset: between(at.length, end) }
}

const HISTORY = { ...DEFAULT_BOUNDS, segmentBytes: 16 * 1024 }
const openEngine = (dir: string) => EngineStore.open(dir, { retention: false, history: HISTORY })

t.test('engine: the history log cut after its last sync keeps every batch synced', async (t) => {
  const base = await tempDir(t, 'svc-power-cut-')
  const dir = join(base, 'engine')
  const store = await openEngine(dir)
  const writes = await writeEngine(store, 120)
  await store.close()
  const last = await newest(join(dir, 'history'), SEGMENT)
  const seg = last.slice(dir.length)
  t.not(seg, '/history/00000001.seg', 'the log has more than one segment: the newest is cut')
  // Every batch was synced before it was acknowledged, and LevelDB points only at synced ones:
  // what a power cut can leave past the last sync is part of a batch being written. That batch
  // is the next one, taken from a copy of the store that wrote it.
  const synced = await size(last)
  const ahead = join(base, 'ahead')
  await copyDir(dir, ahead)
  const writer = await openEngine(ahead)
  await writer.write(writer.runOps({ ...engineRun(9000), id: 'run-in-flight' }))
  await writer.close()
  t.equal(
    await newest(join(ahead, 'history'), SEGMENT),
    ahead + seg,
    'the batch in flight is in the same segment',
  )
  const inFlight = (await readFile(ahead + seg)).subarray(synced)
  t.ok(inFlight.length > 0, `a batch of ${inFlight.length} bytes was in flight`)
  for (let i = 0; i < CUTS; i++) {
    const offset = between(synced, synced + inFlight.length)
    const copy = join(base, `cut-${i}`)
    await copyDir(dir, copy)
    await appendFile(copy + seg, inFlight)
    await truncate(copy + seg, offset)
    const again = await openEngine(copy)
    try {
      t.same(
        await missingEngine(again, writes),
        [],
        `cut at ${offset} (synced to ${synced}, ${inFlight.length} bytes in flight): every synced run is there`,
      )
      const whole = offset === synced + inFlight.length
      t.equal(
        await size(copy + seg),
        whole ? offset : synced,
        'a torn batch is cut off the file, a whole one kept',
      )
      // Written after the cut: lands after the last whole batch and reads back after a reopen.
      await again.write(again.runOps({ ...engineRun(9999), id: 'run-after-cut' }))
      await again.close()
      const third = await openEngine(copy)
      t.same(
        await missingEngine(third, [...writes, { id: 'run-after-cut', finish: false }]),
        [],
        'a write after the cut survives a reopen, and so does every run before it',
      )
      await third.close()
    } finally {
      await again.close().catch(() => undefined)
    }
  }
})

t.test(
  "engine: LevelDB's own log cut anywhere loses nothing synced (the history log is applied again)",
  async (t) => {
    const base = await tempDir(t, 'svc-power-cut-')
    const dir = join(base, 'engine')
    const store = await openEngine(dir)
    let n = 0
    // A read now and then writes what is staged to LevelDB, so its log holds many batches.
    const writes = await writeEngine(store, 120, async () => {
      if (++n % 10 === 0) await store.queryRuns({ limit: 1 })
    })
    await store.close()
    const log = await newest(dir, LEVEL_LOG)
    const end = await size(log)
    t.ok(end > 4096, `LevelDB's log holds what the engine wrote (${end} bytes)`)
    let behind = 0
    for (let i = 0; i < CUTS; i++) {
      const offset = between(0, end)
      const copy = join(base, `cut-${i}`)
      await copyDir(dir, copy)
      await truncate(join(copy, log.slice(dir.length)), offset)
      // What LevelDB alone still says it applied, as the store's open finds it.
      const raw = new Level<string, string>(copy, { valueEncoding: 'utf8' })
      const applied = await raw.get('meta!applied')
      await raw.close()
      const again = await openEngine(copy)
      try {
        if (applied === undefined || applied !== (await appliedOf(dir))) behind++
        t.same(
          await missingEngine(again, writes),
          [],
          `LevelDB's log cut at ${offset} of ${end}: every run is there`,
        )
      } finally {
        await again.close()
      }
    }
    t.comment(`${behind} of ${CUTS} cuts left LevelDB behind the history log`)
  },
)

async function appliedOf(dir: string): Promise<string | undefined> {
  const copy = `${dir}-applied`
  await copyDir(dir, copy)
  const raw = new Level<string, string>(copy, { valueEncoding: 'utf8' })
  try {
    return await raw.get('meta!applied')
  } finally {
    await raw.close()
  }
}

t.test("broker: the persistence's log cut after a write keeps every write before it", async (t) => {
  // The broker's writes are never synced (hub/broker/batched-db.ts): the point here is the length
  // its log had when a write was reported done, which a sync then would have made durable.
  const base = await tempDir(t, 'svc-power-cut-')
  const dir = join(base, 'broker')
  const p = await openBrokerPersistence(dir)
  const points: Synced[] = []
  for (let i = 0; i < 200; i++) {
    await p.store(`power/${i}`, `value ${i}`)
    const file = await newest(dir, LEVEL_LOG)
    points.push({ records: i + 1, file: file.slice(dir.length), length: await size(file) })
  }
  await p.close()
  const log = await newest(dir, LEVEL_LOG)
  const end = await size(log)
  for (let i = 0; i < CUTS; i++) {
    const { at, offset } = cutAfterSync(points, log.slice(dir.length), end)
    const copy = join(base, `cut-${i}`)
    await copyDir(dir, copy)
    await truncate(copy + at.file, offset)
    const again = await openBrokerPersistence(copy)
    try {
      const retained = await again.retained()
      const missing: string[] = []
      for (let k = 0; k < at.records; k++)
        if (retained.get(`power/${k}`) !== `value ${k}`) missing.push(`power/${k}`)
      t.same(missing, [], `cut at ${offset} of ${end} (${at.records} writes done at ${at.length}): all there`)
      await again.store('power/after', 'after the cut')
    } finally {
      await again.close()
    }
    const third = await openBrokerPersistence(copy)
    t.equal(
      (await third.retained()).get('power/after'),
      'after the cut',
      'a write after the cut survives a reopen',
    )
    await third.close()
  }
})

t.test('attestation store: the log cut after a synced append keeps every line before it', async (t) => {
  const base = await tempDir(t, 'svc-power-cut-')
  const dir = join(base, 'attest')
  const store = await openAttestStore(dir)
  const points: Synced[] = []
  for (let i = 0; i < 150; i++) {
    await store.append(attestInput(i))
    const file = await newest(dir, LEVEL_LOG)
    points.push({ records: i + 1, file: file.slice(dir.length), length: await size(file) })
  }
  await store.close()
  const log = await newest(dir, LEVEL_LOG)
  const end = await size(log)
  for (let i = 0; i < CUTS; i++) {
    const { at, offset } = cutAfterSync(points, log.slice(dir.length), end)
    const copy = join(base, `cut-${i}`)
    await copyDir(dir, copy)
    await truncate(copy + at.file, offset)
    const keys = await attestKeys(copy)
    const missing: string[] = []
    for (let k = 0; k < at.records; k++) if (!keys.has(`line-${k}`)) missing.push(`line-${k}`)
    t.same(
      missing,
      [],
      `cut at ${offset} of ${end} (${at.records} appends synced at ${at.length}): all there`,
    )
    // The next line takes the next number: none written over.
    const again = await openAttestStore(copy)
    const { record } = await again.append(attestInput(1000))
    t.equal(record.seq, keys.size, 'the next line is numbered after the last one kept')
    await again.close()
    t.equal((await attestKeys(copy)).size, keys.size + 1, 'and every line kept is still there')
  }
})
