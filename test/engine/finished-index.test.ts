// The finished runs' index in files beside the history log (hub/engine/finished-index.ts,
// hub/engine/README.md "The run index"), with a real engine, LevelDB and small segments: each
// full segment gets its file and LevelDB none of the index; pages agree with the runs; a file
// missing or damaged is built again from its segment; retention drops a file with its segment
// and pages pass over the runs it removed.
import { open, readFile, readdir, rm, truncate } from 'node:fs/promises'
import { join } from 'node:path'
import { Level } from 'level'
import t, { type Test } from 'tap'
import { createEngine } from '../../hub/engine/index.ts'
import { decodeIndexFile, decodeIndexHeader } from '../../hub/engine/log/index-file.ts'
import type { HistoryBounds } from '../../hub/engine/log/retention.ts'
import { INDEX } from '../../hub/engine/run-index.ts'
import { EngineStore } from '../../hub/engine/store.ts'
import type { RunFilter } from '../../sops/hub-engine.ts'
import type { RunRecord } from '../../sops/run/record.ts'
import { tempDir } from '../helpers/tmp.ts'
import { call, event, incompressible, memoryTools, paddedSop, sop, step } from './helpers.ts'

const SMALL: HistoryBounds = { maxAgeMs: 365 * 86_400_000, maxBytes: 1 << 30, segmentBytes: 64 * 1024 }

const SOPS = [
  paddedSop('work'),
  sop({
    name: 'bad',
    maxConcurrent: 100,
    steps: [step(1, { calls: [call('fail', { pad: incompressible(300) })] })],
  }),
]

/** 300 runs, every fifth failing, created a second apart; their ids and final states. */
async function fill(t: Test, dir: string, bounds = SMALL): Promise<Map<string, string>> {
  let now = Date.UTC(2026, 10, 1)
  const engine = await createEngine({
    sops: SOPS,
    tools: memoryTools().registry,
    dbPath: dir,
    history: bounds,
    now: () => now,
  })
  const ids: string[] = []
  for (let i = 0; i < 300; i++) {
    now += 1000
    ids.push((await engine.trigger(i % 5 === 4 ? 'bad' : 'work', event({ i }, now))).runId!)
  }
  await engine.idle()
  const states = new Map<string, string>()
  for (const id of ids) states.set(id, (await engine.getRun(id))!.state)
  await engine.close()
  t.ok(new Set(states.values()).size === 2, 'runs completed and failed')
  return states
}

const files = async (dir: string, ext: string) =>
  (await readdir(join(dir, 'history'))).filter((f) => f.endsWith(ext)).sort()

async function pages(store: EngineStore, filter: RunFilter): Promise<string[]> {
  const ids: string[] = []
  for (let cursor: string | undefined; ; ) {
    const p = await store.queryRuns({ ...filter, limit: 7, ...(cursor ? { cursor } : {}) })
    ids.push(...p.runs.map((r) => r.id))
    if (p.next === null) return ids
    cursor = p.next
  }
}

/** What each filter's pages must hold, newest first: from the runs' own records. */
async function expected(store: EngineStore, ids: Iterable<string>) {
  const runs: RunRecord[] = []
  for (const id of ids) {
    const r = await store.getRun(id)
    if (r) runs.push(r)
  }
  runs.sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1))
  const of = (f: (r: (typeof runs)[number]) => boolean) => runs.filter(f).map((r) => r.id)
  return {
    all: of(() => true),
    failed: of((r) => r.state === 'failed'),
    workCompleted: of((r) => r.sop === 'work' && r.state === 'completed'),
  }
}

async function checkPages(t: Test, store: EngineStore, ids: Iterable<string>, when: string) {
  const want = await expected(store, ids)
  t.ok(want.all.length > 0, `${when}: runs to list`)
  t.same(await pages(store, {}), want.all, `${when}: every run once, newest first`)
  t.same(await pages(store, { state: 'failed' }), want.failed, `${when}: by state`)
  t.same(
    await pages(store, { sop: 'work', state: 'completed' }),
    want.workCompleted,
    `${when}: by SOP and state`,
  )
}

t.test('each full segment gets its index file; LevelDB holds none of the index; pages agree', async (t) => {
  const dir = join(await tempDir(t, 'svc-finidx-'), 'engine')
  const states = await fill(t, dir)
  const segs = await files(dir, '.seg')
  t.ok(segs.length > 3, `several segments (${segs.length})`)
  t.same(
    await files(dir, '.idx'),
    segs.slice(0, -1).map((f) => f.replace('.seg', '.idx')),
    'a file for each full segment, none for the one being written',
  )
  let entries = 0
  for (const f of await files(dir, '.idx')) {
    const bytes = await readFile(join(dir, 'history', f))
    const header = decodeIndexHeader(bytes, Number.parseInt(f, 16))
    t.ok(header, `${f} has a whole header`)
    entries += decodeIndexFile(bytes, header!).length
  }
  t.ok(entries > 0 && entries < states.size, `the files hold the sealed segments' runs (${entries})`)
  const db = new Level<string, string>(dir)
  let keys = 0
  for await (const _ of db.keys({ gte: INDEX, lt: `${INDEX}\xff` })) keys++
  await db.close()
  t.equal(keys, 0, 'no index key in LevelDB')
  const store = await EngineStore.open(dir, { history: SMALL, retention: false })
  t.teardown(() => store.close())
  await checkPages(t, store, states.keys(), 'from the files and the segment being written')
})

t.test('an index file missing, damaged or cut short is built again from its segment', async (t) => {
  const dir = join(await tempDir(t, 'svc-finidx-damaged-'), 'engine')
  const states = await fill(t, dir)
  const idx = await files(dir, '.idx')
  t.ok(idx.length >= 3, 'three files to damage')
  const path = (f: string) => join(dir, 'history', f)
  const before = await readFile(path(idx[1]!))
  await rm(path(idx[0]!))
  const fh = await open(path(idx[1]!), 'r+')
  // One byte of the body changed: its check fails.
  const at = before.indexOf(0x0a) + 20
  await fh.write(Buffer.from([before[at]! ^ 0xff]), 0, 1, at)
  await fh.close()
  await truncate(path(idx[2]!), 10)
  const store = await EngineStore.open(dir, { history: SMALL, retention: false })
  await checkPages(t, store, states.keys(), 'after the damage')
  await store.close()
  t.same(await files(dir, '.idx'), idx, 'every file is there again')
  t.same(await readFile(path(idx[1]!)), before, 'the damaged one as it was written')
})

t.test('retention drops a file with its segment; pages pass over the runs it removed', async (t) => {
  const dir = join(await tempDir(t, 'svc-finidx-retention-'), 'engine')
  const states = await fill(t, dir)
  const bounds: HistoryBounds = { ...SMALL, maxBytes: 128 * 1024 }
  const store = await EngineStore.open(dir, { history: bounds })
  t.teardown(() => store.close())
  await store.prune()
  const segs = await files(dir, '.seg')
  t.same(
    await files(dir, '.idx'),
    segs.slice(0, -1).map((f) => f.replace('.seg', '.idx')),
    'the files of the dropped segments went with them',
  )
  const kept = [...states.keys()]
  let gone = 0
  for (const id of kept) if (!(await store.getRun(id))) gone++
  t.ok(gone > 0, `retention removed runs (${gone})`)
  // A run whose summary is in a kept segment but whose first record was in a dropped one is
  // removed too; its entry stays in its file and is passed over.
  await checkPages(t, store, kept, 'after retention')
  t.equal(
    store.history().oldestAt,
    (await store.getRun((await pages(store, {})).at(-1)!))!.createdAt,
    'the history reaches back to the oldest run listed',
  )
})

t.test("retention's look at the oldest run keeps no body; a page's goes once no page uses it", async (t) => {
  // Whether a body is kept is seen from the disk: a body damaged after it was kept is not
  // noticed by a page; one read again is found damaged and its file is built again. The page
  // asked for is the three oldest runs, which only the oldest file holds.
  const dir = join(await tempDir(t, 'svc-finidx-kept-'), 'engine')
  const states = await fill(t, dir)
  const idx = await files(dir, '.idx')
  const path = (f: string) => join(dir, 'history', f)
  const written = await readFile(path(idx[0]!))
  const damage = async () => {
    const fh = await open(path(idx[0]!), 'r+')
    const at = written.indexOf(0x0a) + 20
    await fh.write(Buffer.from([written[at]! ^ 0xff]), 0, 1, at)
    await fh.close()
  }
  const damaged = async () => !(await readFile(path(idx[0]!))).equals(written)
  const oldest = async (store: EngineStore) => {
    const from = store.history().oldestAt!
    return (await store.queryRuns({ until: from + 3_000 })).runs.map((r) => r.id)
  }

  // Looked at every minute (the default): nothing here takes that long.
  const store = await EngineStore.open(dir, { history: SMALL, retention: false })
  await store.prune()
  t.ok(store.history().oldestAt, 'retention read how far back the history reaches')
  const want = (await expected(store, states.keys())).all.slice(-3)
  await damage()
  t.same(await oldest(store), want, 'the three oldest runs')
  t.notOk(await damaged(), 'the page read the oldest file from disk, and built it again')
  await damage()
  t.same(await oldest(store), want)
  t.ok(await damaged(), 'the page before kept the body: the damage went unseen')
  await store.close()

  // Looked at every 50 ms: a second without a page is many looks.
  const again = await EngineStore.open(dir, { history: SMALL, retention: false, indexCacheSweepMs: 50 })
  t.teardown(() => again.close())
  await again.prune()
  t.same(await oldest(again), want, 'reopened')
  t.notOk(await damaged(), 'built again')
  await damage()
  await new Promise((r) => setTimeout(r, 1000))
  t.same(await oldest(again), want, 'a second after the last page')
  t.notOk(await damaged(), 'the body had gone: read from disk again, and built again')
})
