// A run admitted and finished between two of LevelDB's writes never reaches LevelDB: its index
// entry holds where its records are in the history log (hub/engine/README.md, "The run index"
// and "The write budget"). With a real engine, LevelDB and small segments: LevelDB holds only the
// run that waited across one of its writes (and those that straddle segments); every read (by id, pages, the whole history, a
// backup's records) finds the others; the index files lost are built again from the segments;
// a rebuild of the index gives them to LevelDB; retention drops them with their segment and
// counts them.
import { readdir, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { Level } from 'level'
import t, { type Test } from 'tap'
import { createEngine } from '../../hub/engine/index.ts'
import type { HistoryBounds } from '../../hub/engine/log/retention.ts'
import { SegmentLog } from '../../hub/engine/log/segment-log.ts'
import { EngineStore } from '../../hub/engine/store.ts'
import { tempDir } from '../helpers/tmp.ts'
import { call, event, memoryTools, paddedSop, sop, step } from './helpers.ts'

const SMALL: HistoryBounds = { maxAgeMs: 365 * 86_400_000, maxBytes: 1 << 30, segmentBytes: 64 * 1024 }
/** LevelDB's share waits an hour: it is written when the test reads, and at close. */
const STAGE_MS = 3_600_000

const SOPS = [
  paddedSop('work'),
  sop({
    name: 'gate',
    steps: [step(1, { requiresConfirmation: true, calls: [call('echo')] })],
  }),
]

/**
 * One run stopped at its approval, LevelDB written while it waits (a read), then 200 runs a
 * second apart, then the approval. The runs' final states by id, and the waiting one's id.
 */
async function fill(t: Test, dir: string): Promise<{ states: Map<string, string>; gated: string }> {
  let now = Date.UTC(2026, 10, 1)
  const engine = await createEngine({
    sops: SOPS,
    tools: memoryTools().registry,
    dbPath: dir,
    history: SMALL,
    now: () => now,
    stageMs: STAGE_MS,
  })
  const gated = (await engine.trigger('gate', event({ g: 1 }, now))).runId!
  await engine.idle()
  t.match((await engine.queryRuns({ state: 'waiting_approval' })).runs, [{ id: gated }], 'one run waits')
  const ids = [gated]
  for (let i = 0; i < 200; i++) {
    now += 1000
    ids.push((await engine.trigger('work', event({ i }, now))).runId!)
  }
  await engine.idle()
  t.match(await engine.approve(gated), { ok: true })
  await engine.idle()
  const states = new Map<string, string>()
  for (const id of ids) states.set(id, (await engine.getRun(id))!.state)
  await engine.close()
  t.same(new Set(states.values()), new Set(['completed']), 'every run completed')
  return { states, gated }
}

/** The runs LevelDB holds any record or summary of. */
async function heldByLevel(dir: string): Promise<Set<string>> {
  const db = new Level<string, string>(dir)
  const ids = new Set<string>()
  for await (const k of db.keys({ gt: 'run!', lt: 'run!\xff' })) ids.add(k.slice(4, k.lastIndexOf('!')))
  for await (const k of db.keys({ gt: 'fin!', lt: 'fin!\xff' })) ids.add(k.slice(4))
  await db.close()
  return ids
}

/**
 * The runs whose first record and summary the log holds in different segments: the run index
 * locates a run from its summary's segment alone, so LevelDB keeps these.
 */
async function straddling(dir: string): Promise<string[]> {
  const log = await SegmentLog.open(join(dir, 'history'), SMALL.segmentBytes)
  const first = new Map<string, number>()
  const out: string[] = []
  for (const { n } of log.segments())
    for (const b of await log.scan(n))
      for (const { op } of b.ops) {
        if (op.type !== 'put') continue
        if (op.key.startsWith('run!') && op.key.endsWith('!000000')) first.set(op.key.slice(4, -7), n)
        if (op.key.startsWith('fin!') && first.get(op.key.slice(4)) !== n) out.push(op.key.slice(4))
      }
  await log.close()
  return out
}

async function everyRead(t: Test, store: EngineStore, states: Map<string, string>, when: string) {
  let whole = 0
  for (const [id, state] of states) if ((await store.getRun(id))?.state === state) whole++
  t.equal(whole, states.size, `${when}: every run reads whole by its id`)
  const listed: string[] = []
  for (let cursor: string | undefined; ; ) {
    const p = await store.queryRuns({ limit: 50, ...(cursor ? { cursor } : {}) })
    listed.push(...p.runs.map((r) => r.id))
    if (p.next === null) break
    cursor = p.next
  }
  t.same(listed.sort(), [...states.keys()].sort(), `${when}: every run listed once`)
  const finished: string[] = []
  for await (const s of store.finished()) finished.push((s as { id: string }).id)
  t.same(finished.sort(), [...states.keys()].sort(), `${when}: the whole history read holds every run once`)
}

t.test('runs finished between LevelDB writes leave it nothing, and every read finds them', async (t) => {
  const dir = join(await tempDir(t, 'svc-located-'), 'engine')
  const { states, gated } = await fill(t, dir)
  t.ok(
    (await readdir(join(dir, 'history'))).filter((f) => f.endsWith('.idx')).length >= 3,
    'several index files',
  )
  const straddled = (await straddling(dir)).filter((id) => id !== gated)
  const segments = (await readdir(join(dir, 'history'))).filter((f) => f.endsWith('.seg')).length
  const held = [gated, ...straddled].sort()
  t.ok(
    states.size - held.length > states.size * 0.75,
    `most runs are located by the index alone (${states.size - held.length} of ${states.size}, over ${segments} segments)`,
  )
  t.same(
    [...(await heldByLevel(dir))].sort(),
    held,
    'LevelDB holds only the run that waited across its write, and those that straddle segments',
  )

  const store = await EngineStore.open(dir, { history: SMALL, retention: false })
  await everyRead(t, store, states, 'from the index files and the segment being written')

  // A backup takes every run, in the keys of the store's first layout.
  const summaries = new Set<string>()
  const records = new Map<string, number>()
  for await (const [key, value] of store.exportRecords({ history: true })) {
    if (key.startsWith('fin!')) summaries.add((JSON.parse(value) as { id: string }).id)
    if (key.startsWith('run!')) {
      const id = key.slice(4, key.lastIndexOf('!'))
      JSON.parse(value)
      records.set(id, (records.get(id) ?? 0) + 1)
    }
  }
  await store.close()
  t.same([...summaries].sort(), [...states.keys()].sort(), "a backup's records hold every run's summary")
  t.same([...records.keys()].sort(), [...states.keys()].sort(), '… and its records')

  // Index files lost (a card that lost them): built again from the segments, records and all.
  for (const f of await readdir(join(dir, 'history')))
    if (f.endsWith('.idx')) await rm(join(dir, 'history', f))
  const again = await EngineStore.open(dir, { history: SMALL, retention: false })
  await everyRead(t, again, states, 'index files built again from the segments')
  await again.close()
  t.same([...(await heldByLevel(dir))].sort(), held, 'LevelDB still holds only those')

  // A rebuild of the index applies the whole log to LevelDB: every run is there after it.
  const rebuilt = await EngineStore.open(dir, { history: SMALL, retention: false })
  await rebuilt.rebuildIndex()
  await everyRead(t, rebuilt, states, 'after a rebuild of the index')
  await rebuilt.close()
  t.equal((await heldByLevel(dir)).size, states.size, 'a rebuild gives LevelDB every run')
})

t.test('retention drops the runs the index alone locates with their segment, and counts them', async (t) => {
  const dir = join(await tempDir(t, 'svc-located-retention-'), 'engine')
  const { states, gated } = await fill(t, dir)
  const drops: { segment: number; removed: number }[] = []
  const store = await EngineStore.open(dir, {
    history: { ...SMALL, maxBytes: 128 * 1024 },
    onDrop: (d) => drops.push(d),
  })
  t.teardown(() => store.close())
  await store.prune()
  t.ok(drops.length > 0, `segments dropped (${drops.length})`)
  let gone = 0
  for (const id of states.keys()) if (!(await store.getRun(id))) gone++
  t.ok(gone > 0, `runs removed (${gone})`)
  t.equal(
    drops.reduce((n, d) => n + d.removed, 0),
    gone,
    'each removed run counted once, in the log line of the segment that held it',
  )
  t.notOk(await store.getRun(gated), 'the oldest run went too, from LevelDB')
})
