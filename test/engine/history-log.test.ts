// The engine's history log (hub/engine/log/, hub/engine/README.md "The history log"), real
// files and LevelDB in temp folders: a store made by the code before the log opens and keeps
// every run; a batch cut short is cut off; retention drops old segments whole and keeps every
// unfinished run, approval, kept trigger and once-only mark; the index rebuilt from the log is
// the index the store kept.
import { cp, open, readdir, stat, truncate } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { createEngine } from '../../hub/engine/index.ts'
import { EngineStore } from '../../hub/engine/store.ts'
import type { HistoryBounds } from '../../hub/engine/log/retention.ts'
import { openFiles } from '../helpers/open-files.ts'
import { tempDir } from '../helpers/tmp.ts'
import { call, event, incompressible, memoryTools, paddedSop, sop, step } from './helpers.ts'
import { indexOf } from './fixtures/history-world.ts'
import { FIXTURE_SOPS } from '../fixtures/engine-store-v1/sops.ts'

const FIXTURE = join(import.meta.dirname, '../fixtures/engine-store-v1/store')

t.test('a store written before the history log opens, moves into it and keeps every run', async (t) => {
  const dir = join(await tempDir(t, 'svc-migrate-'), 'engine')
  await cp(FIXTURE, dir, { recursive: true })
  const tools = memoryTools()
  const engine = await createEngine({ sops: FIXTURE_SOPS, tools: tools.registry, dbPath: dir })
  t.teardown(() => engine.close())

  const all = await engine.queryRuns({ limit: 100 })
  t.equal(
    all.runs.length,
    8,
    'every run the old store held: 6 press and breaks runs, the waiting one, and none lost',
  )
  t.same(all.runs.map((r) => r.sop).sort(), [
    'breaks',
    'gate',
    'press',
    'press',
    'press',
    'press',
    'press',
    'press',
  ])
  t.match(
    await engine.queryRuns({ state: 'failed' }),
    { runs: [{ sop: 'breaks' }] },
    'the failed run, by state',
  )
  t.equal((await engine.queryRuns({ sop: 'press', state: 'completed' })).runs.length, 6)
  const [waiting] = engine.pending()
  t.match(waiting, { sop: 'gate', state: 'waiting_approval' }, 'the run at its approval still waits')
  t.match(engine.keptTriggers(), [{ sop: 'gate', kind: 'held' }], 'the held trigger is still held')
  const full = await engine.getRun(all.runs.find((r) => r.sop === 'breaks')!.id)
  t.match(full, { state: 'failed', steps: { 1: { status: 'failed' } } }, 'a run read whole from its records')
  t.ok(full!.log.length > 0, 'with its log')
  t.match(
    await engine.trigger('press', { ...event({ i: 0 }), once: { key: 'press 0', check: true } }),
    { duplicate: true },
    'a once-only mark made by the old store still holds',
  )

  // The run waiting at its approval goes on, and the held trigger after it.
  t.match(await engine.approve(waiting!.id), { ok: true })
  await engine.idle()
  t.equal((await engine.getRun(waiting!.id))?.state, 'completed')
  t.match(engine.pending(), [{ sop: 'gate', state: 'waiting_approval' }], 'the held trigger was admitted')
  await engine.close()

  const segments = await readdir(join(dir, 'history'))
  t.ok(segments.length >= 1, 'the records are in the log')
  const index = await indexOf(dir)
  t.ok(
    index.filter((l) => /^(run|fin)!/.test(l)).every((l) => / = @/.test(l)),
    'LevelDB holds where each record is, not the record',
  )
})

t.test('a batch cut short by a crash is cut off; the batches before it stay', async (t) => {
  const dir = join(await tempDir(t, 'svc-torn-'), 'engine')
  const tools = memoryTools()
  const S = sop({ name: 's', maxConcurrent: 10, steps: [step(1, { calls: [call('echo')] })] })
  const engine = await createEngine({ sops: [S], tools: tools.registry, dbPath: dir })
  const a = await engine.trigger('s', event({ n: 1 }))
  await engine.idle()
  await engine.close()

  const seg = join(dir, 'history', (await readdir(join(dir, 'history'))).sort().at(-1)!)
  const whole = (await stat(seg)).size
  // A frame header promising more than follows: the start of a batch whose write never finished.
  const fh = await open(seg, 'a')
  await fh.write(Buffer.from([0x40, 0, 0, 0, 1, 2, 3, 4, 0x50, 1]))
  await fh.close()

  const again = await createEngine({ sops: [S], tools: tools.registry, dbPath: dir })
  t.teardown(() => again.close())
  t.equal((await stat(seg)).size, whole, 'the torn batch is cut off the segment')
  t.equal((await again.getRun(a.runId!))?.state, 'completed', 'the run before it is whole')
  const b = await again.trigger('s', event({ n: 2 }))
  await again.idle()
  t.equal((await again.getRun(b.runId!))?.state, 'completed', 'and the log takes new batches after it')
})

t.test(
  'a log that lost synced bytes (a disk that lied): the index is built again from what it holds',
  async (t) => {
    const dir = join(await tempDir(t, 'svc-lied-'), 'engine')
    const tools = memoryTools()
    const S = sop({ name: 's', maxConcurrent: 10, steps: [step(1, { calls: [call('echo')] })] })
    const first = await createEngine({ sops: [S], tools: tools.registry, dbPath: dir })
    const a = await first.trigger('s', event({ n: 1 }))
    await first.idle()
    await first.close()
    const seg = join(dir, 'history', (await readdir(join(dir, 'history'))).sort().at(-1)!)
    const kept = (await stat(seg)).size

    const second = await createEngine({ sops: [S], tools: tools.registry, dbPath: dir })
    const lost: string[] = []
    for (let n = 2; n <= 4; n++)
      lost.push((await second.trigger('s', { ...event({ n }), once: { key: `k${n}`, check: true } })).runId!)
    await second.idle()
    await second.close()
    // What a card that acknowledged syncs it never made leaves: the log shorter than LevelDB knows.
    await truncate(seg, kept)

    const warned: string[] = []
    const log = { info() {}, warn: (_o: object, m: string) => warned.push(m), error() {} }
    const third = await createEngine({ sops: [S], tools: tools.registry, dbPath: dir, log })
    t.match(
      warned,
      [/the history log ends at \d+:\d+, before \d+:\d+, .*the index is built again/],
      'said once, with where',
    )
    t.equal((await third.getRun(a.runId!))?.state, 'completed', 'the run the log holds is whole')
    for (const id of lost) t.equal(await third.getRun(id), undefined, 'a run the log lost is not there')
    t.same(
      (await third.queryRuns({ limit: 10 })).runs.map((r) => r.id),
      [a.runId],
      'the index lists what the log holds',
    )
    t.ok(Array.isArray(await third.admissions?.()), 'admission records read without an error')
    const b = await third.trigger('s', event({ n: 5 }))
    await third.idle()
    await third.close()
    warned.length = 0
    const fourth = await createEngine({ sops: [S], tools: tools.registry, dbPath: dir, log })
    t.teardown(() => fourth.close())
    t.same(warned, [], 'the next open finds the index and the log agreeing')
    t.equal((await fourth.getRun(b.runId!))?.state, 'completed', 'a run written after it is kept')
    // The new run's batch went where the lost ones were: nothing may still point there.
    for (const id of lost) t.equal(await fourth.getRun(id), undefined, 'a lost run is still not there')
    t.same(
      (await fourth.queryRuns({ limit: 10 })).runs.map((r) => r.id).sort(),
      [a.runId, b.runId].sort(),
      'the index lists the two runs the log holds',
    )
  },
)

const SMALL: HistoryBounds = { maxAgeMs: 3_600_000, maxBytes: 1024 * 1024 * 1024, segmentBytes: 64 * 1024 }

t.test(
  'retention drops whole old segments and keeps unfinished runs, approvals, kept triggers and marks',
  async (t) => {
    const dir = join(await tempDir(t, 'svc-retention-'), 'engine')
    let now = Date.UTC(2026, 10, 1)
    const clock = () => now
    const tools = memoryTools()
    const sops = [
      paddedSop('work'),
      sop({
        name: 'gate',
        admissionPolicy: 'hold',
        maxConcurrent: 3,
        steps: [step(1, { requiresConfirmation: true, calls: [call('echo')] })],
      }),
    ]
    const drops: { removed: number; carried: number }[] = []
    const log = {
      info: (o: object | string) => {
        if (typeof o === 'object' && 'carried' in o) drops.push(o as (typeof drops)[number])
      },
      warn() {},
      error() {},
    }
    const engine = await createEngine({
      sops,
      tools: tools.registry,
      dbPath: dir,
      now: clock,
      history: SMALL,
      log,
    })
    t.teardown(() => engine.close())

    // An old run waiting at its approval, a trigger held behind it, and a once-only mark.
    const gated = await engine.trigger('gate', event({ g: 1 }, now))
    await engine.idle()
    t.equal((await engine.trigger('gate', event({ g: 2 }, now))).outcome, 'held')
    const marked = await engine.trigger('work', { ...event({ m: 1 }, now), once: { key: 'k1', check: true } })
    const old: string[] = []
    for (let i = 0; i < 300; i++) old.push((await engine.trigger('work', event({ i }, now))).runId!)
    await engine.idle()
    const segmentsBefore = (await readdir(join(dir, 'history'))).length
    t.ok(segmentsBefore > 3, `the old runs fill several segments (${segmentsBefore})`)

    // Two hours on: the old segments are past the age bound.
    now += 2 * 3_600_000
    const fresh: string[] = []
    for (let i = 0; i < 20; i++) fresh.push((await engine.trigger('work', event({ i }, now))).runId!)
    await engine.idle()
    await (engine as unknown as { store: EngineStore }).store.prune()

    const segmentsAfter = (await readdir(join(dir, 'history'))).length
    t.ok(segmentsAfter < segmentsBefore, `old segments dropped (${segmentsBefore} → ${segmentsAfter})`)
    t.equal(await engine.getRun(old[0]!), undefined, 'an old finished run is gone')
    const listed = (await engine.queryRuns({ limit: 1000 })).runs.map((r) => r.id)
    const oldListed = old.filter((id) => listed.includes(id))
    t.same(
      drops.reduce((sum, d) => ({ removed: sum.removed + d.removed, carried: sum.carried + d.carried }), {
        removed: 0,
        carried: 0,
      }),
      // The once-marked run and the old ones, less those still in the segment being written.
      { removed: 1 + old.length - oldListed.length, carried: 1 },
      'each drop logged with the finished runs it removed and the waiting run carried on, once',
    )
    // Old runs in the segment still being written stay until it is full and dropped in turn.
    t.ok(
      oldListed.length < old.length / 2,
      `most old runs left the index (${oldListed.length} of ${old.length} kept)`,
    )
    for (const id of old.filter((id) => !listed.includes(id))) t.equal(await engine.getRun(id), undefined)
    for (const id of listed) t.ok(await engine.getRun(id), `a listed run reads whole (${id.slice(0, 8)})`)
    t.same(
      listed.filter((id) => !oldListed.includes(id)).sort(),
      [...fresh, gated.runId!].sort(),
      'the recent runs and the waiting one are listed',
    )
    for (const id of fresh) t.equal((await engine.getRun(id))?.state, 'completed')
    t.match(
      await engine.getRun(gated.runId!),
      { state: 'waiting_approval' },
      'the old run at its approval stays',
    )
    t.match(engine.keptTriggers(), [{ kind: 'held' }], 'the held trigger stays')
    t.match(
      await engine.trigger('work', { ...event({ m: 1 }, now), once: { key: 'k1', check: true } }),
      { duplicate: true, runId: marked.runId },
      'a once-only mark inside its window holds',
    )

    // Carried forward, the waiting run survives a restart and a rebuild of the index, and goes on.
    await engine.close()
    const before = await indexOf(dir)
    const store = await EngineStore.open(dir, { history: SMALL, now: clock })
    await store.rebuildIndex()
    await store.close()
    t.same(await indexOf(dir), before, 'the index rebuilt from the log is the index the store kept')
    const again = await createEngine({ sops, tools: tools.registry, dbPath: dir, now: clock, history: SMALL })
    t.teardown(() => again.close())
    t.match(await again.approve(gated.runId!), { ok: true })
    await again.idle()
    t.equal(
      (await again.getRun(gated.runId!))?.state,
      'completed',
      'approved after its old segment was dropped',
    )
    t.match(
      again.pending(),
      [{ sop: 'gate', state: 'waiting_approval' }],
      'the held trigger admitted after it',
    )
  },
)

t.test('the size bound drops the oldest segments whatever their age', async (t) => {
  const dir = join(await tempDir(t, 'svc-retention-size-'), 'engine')
  const bounds: HistoryBounds = { maxAgeMs: 365 * 86_400_000, maxBytes: 256 * 1024, segmentBytes: 64 * 1024 }
  const tools = memoryTools()
  const S = sop({
    name: 'w',
    maxConcurrent: 100,
    steps: [step(1, { calls: [call('echo', { pad: incompressible(800) })] })],
  })
  const engine = await createEngine({ sops: [S], tools: tools.registry, dbPath: dir, history: bounds })
  t.teardown(() => engine.close())
  const ids: string[] = []
  for (let i = 0; i < 600; i++) ids.push((await engine.trigger('w', event({ i }))).runId!)
  await engine.idle()
  await (engine as unknown as { store: EngineStore }).store.prune()
  let bytes = 0
  for (const f of await readdir(join(dir, 'history'))) bytes += (await stat(join(dir, 'history', f))).size
  t.ok(bytes <= bounds.maxBytes, `the log is within its bound (${bytes} bytes)`)
  t.equal(await engine.getRun(ids[0]!), undefined, 'the first run is gone')
  t.equal((await engine.getRun(ids.at(-1)!))?.state, 'completed', 'the last is kept')
  const listed = (await engine.queryRuns({ limit: 1000 })).runs
  t.ok(
    listed.length > 0 && listed.length < ids.length,
    `the index lists the kept runs only (${listed.length})`,
  )
  for (const r of listed) t.ok(await engine.getRun(r.id), `listed run ${r.id.slice(0, 8)} reads whole`)
})

t.test('finished runs leave nothing behind in the store while no retention pass runs', async (t) => {
  const dir = join(await tempDir(t, 'svc-finished-'), 'engine')
  const tools = memoryTools()
  const S = sop({ name: 's', maxConcurrent: 100, steps: [step(1, { calls: [call('echo')] })] })
  const engine = await createEngine({ sops: [S], tools: tools.registry, dbPath: dir })
  t.teardown(() => engine.close())
  const store = (engine as unknown as { store: EngineStore }).store
  await store.prune()
  for (let i = 0; i < 500; i++) await engine.trigger('s', event({ i }))
  await engine.idle()
  const held = store as unknown as { finishedSince: Set<string>; written: Map<string, unknown> }
  t.equal(
    held.finishedSince.size,
    0,
    'no id kept per finished run (it held every one until a segment was dropped)',
  )
  t.equal(held.written.size, 0, 'nor what was written of it')
})

t.test('reads at the same time of one segment share one file handle', async (t) => {
  const dir = join(await tempDir(t, 'svc-readers-'), 'engine')
  const tools = memoryTools()
  const S = sop({
    name: 's',
    maxConcurrent: 100,
    steps: [step(1, { calls: [call('echo', { pad: incompressible(500) })] })],
  })
  const bounds: HistoryBounds = { maxAgeMs: 365 * 86_400_000, maxBytes: 1 << 30, segmentBytes: 64 * 1024 }
  const engine = await createEngine({ sops: [S], tools: tools.registry, dbPath: dir, history: bounds })
  t.teardown(() => engine.close())
  const ids: string[] = []
  for (let i = 0; i < 300; i++) ids.push((await engine.trigger('s', event({ i }))).runId!)
  await engine.idle()
  const runs = await Promise.all(ids.map((id) => engine.getRun(id)))
  t.ok(
    runs.every((r) => r?.state === 'completed'),
    'every run reads whole',
  )
  const segments = (await readdir(join(dir, 'history'))).length
  const open = (await openFiles()).filter((f) => f.path.startsWith(join(dir, 'history')))
  t.ok(open.length <= segments, `${open.length} handles open on ${segments} segments`)
})
