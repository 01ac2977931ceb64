// The run index (hub/engine/run-index.ts, store.ts): newest-first keyset pages by SOP, state and
// time that agree with the run records — across pages, when runs change state, after a SIGKILL
// mid-write, and after re-indexing a store written before the index existed.
import { readdir, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Level } from 'level'
import t, { type Test } from 'tap'
import { INDEX, INDEX_MARKER, INDEX_VERSION } from '../../hub/engine/run-index.ts'
import { RUN_STATES, isFinished } from '../../sops/run/states.ts'
import { EngineStore } from '../../hub/engine/store.ts'
import type { RunFilter, RunSummary } from '../../sops/hub-engine.ts'
import { MANY_RUNS_SOPS, manyRunsState, writeManyRuns } from '../../bench/fixtures/many-runs.ts'
import { tempDir } from '../helpers/tmp.ts'
import { startReadyChild } from '../helpers/ready-child.ts'
import { waitFor } from '../helpers/wait.ts'
import { call, event, sop, step } from './helpers.ts'
import { startEngine } from './engine-helpers.ts'

const N = 1234
const START = Date.UTC(2026, 10, 1)
const STEP = 1000

/** Run i of the fixture, as the filter sees it (computed from the fixture's rules, not stored). */
const fixtureRun = (i: number) => ({
  i,
  sop: MANY_RUNS_SOPS[i % MANY_RUNS_SOPS.length]!,
  state: manyRunsState(i),
  createdAt: START + i * STEP,
})

async function allPages(
  t: Test,
  store: EngineStore,
  filter: RunFilter,
): Promise<{ ids: string[]; pages: number }> {
  const ids: string[] = []
  let pages = 0
  let cursor: string | undefined
  for (;;) {
    const page = await store.queryRuns({ ...filter, ...(cursor ? { cursor } : {}) })
    pages++
    ids.push(...page.runs.map((r) => r.id))
    if (page.next === null) break
    t.ok(page.runs.length === (filter.limit ?? 100), 'a page with a next is full')
    cursor = page.next
  }
  return { ids, pages }
}

t.test('pages cover every filter with no gap and no duplicate', async (t) => {
  const dir = await tempDir(t, 'svc-index-')
  const ids = await writeManyRuns(dir, { n: N, start: START, stepMs: STEP })
  const store = await EngineStore.open(dir)
  t.teardown(() => store.close())
  const since = START + 200 * STEP
  const until = START + 1001 * STEP + 1
  const filters: RunFilter[] = [
    {},
    { sop: 'door-open' },
    { state: 'failed' },
    { state: 'waiting_approval' },
    { sop: 'coffee-refill', state: 'cancelled' },
    { since },
    { until },
    { sop: 'vending-dispense', state: 'completed', since, until },
    { sop: 'no-such-sop' },
  ]
  for (const f of filters) {
    const want = Array.from({ length: N }, (_, i) => fixtureRun(i))
      .filter(
        (r) =>
          (f.sop === undefined || r.sop === f.sop) &&
          (f.state === undefined || r.state === f.state) &&
          (f.since === undefined || r.createdAt >= f.since) &&
          (f.until === undefined || r.createdAt < f.until),
      )
      .reverse()
      .map((r) => ids[r.i]!)
    for (const limit of [7, 50]) {
      const got = await allPages(t, store, { ...f, limit })
      t.same(got.ids, want, `${JSON.stringify(f)} in pages of ${limit}: every run once, newest first`)
      t.equal(got.pages, Math.max(1, Math.ceil(want.length / limit)), 'and no empty page at the end')
    }
  }
  const page = await store.queryRuns({ state: 'failed', sop: 'door-open', limit: 3 })
  for (const r of page.runs)
    t.match(r, { sop: 'door-open', state: 'failed', error: String }, 'summaries are whole')
})

t.test('a filter the index cannot serve is refused by name', async (t) => {
  const dir = await tempDir(t, 'svc-index-')
  const store = await EngineStore.open(dir)
  t.teardown(() => store.close())
  const bad: [RunFilter, RegExp][] = [
    [{ state: 'sleeping' as never }, /state "sleeping" is not one of pending, running/],
    [{ cursor: 'nope' }, /cursor "nope" is not one this hub gave out/],
    [{ cursor: '0000000000.a!b' }, /cursor/],
    [{ limit: 0 }, /limit must be a whole number/],
    [{ since: Number.NaN }, /since must be a time/],
    [{ until: -1 }, /until must be a time/],
  ]
  for (const [f, msg] of bad) await t.rejects(store.queryRuns(f), { name: 'RunFilterError', message: msg })
})

t.test(
  'a run is found by its state as it changes; live runs come from memory, finished ones from the index',
  async (t) => {
    const s = sop({ name: 'g', steps: [step(1, { calls: [call('echo')], requiresConfirmation: true })] })
    const { engine, dir, close } = await startEngine(t, [s])
    const a = await engine.trigger('g', event({ n: 1 }))
    const b = await engine.trigger('g', event({ n: 2 }))
    await waitFor(() => engine.pending().length === 2, 'both runs to wait for approval')
    const ids = async (f: RunFilter) => (await engine.queryRuns(f)).runs.map((r) => r.id)
    t.same(await ids({ state: 'waiting_approval' }), [b.runId, a.runId])
    t.same(await ids({ state: 'completed' }), [])
    t.ok((await engine.approve(a.runId!)).ok)
    await engine.idle()
    t.same(await ids({ state: 'waiting_approval', sop: 'g' }), [b.runId], 'a left waiting_approval')
    t.same(await ids({ state: 'completed', sop: 'g' }), [a.runId], 'and is under completed')
    t.ok((await engine.deny(b.runId!)).ok)
    await engine.idle()
    t.same(await ids({ state: 'cancelled' }), [b.runId])
    t.same(await ids({}), [b.runId, a.runId])
    await close()
    // The store alone (no engine memory) says the same: the moves were written, not only remembered.
    const store = await EngineStore.open(dir)
    t.same((await store.queryRuns({ state: 'waiting_approval' })).runs, [])
    t.same(
      (await store.queryRuns({ state: 'completed' })).runs.map((r: RunSummary) => r.id),
      [a.runId],
    )
    await store.close()
    t.same((await indexAgrees(dir)).agree, { extra: [], missing: [] })
  },
)

t.test('after a SIGKILL mid-write the index agrees with the records', async (t) => {
  const dir = await tempDir(t, 'svc-index-crash-')
  const child = fileURLToPath(new URL('./fixtures/index-child.ts', import.meta.url))
  const proc = await startReadyChild(t, child, dir, 'the child to store 300 changes')
  t.notOk(proc.exited(), 'the child was still writing')
  await proc.kill()
  const check = await indexAgrees(join(dir, 'db'))
  t.ok(check.runs > 100, `many runs were stored (${check.runs})`)
  t.same(check.agree, { extra: [], missing: [] }, 'no index key without its run, none missing')
  t.ok(check.states.size >= 3, `runs in several states: ${[...check.states].join(', ')}`)
})

t.test('a store whose index is LevelDB keys (index 1) is re-indexed into files once on open', async (t) => {
  const dir = await tempDir(t, 'svc-index-old-')
  await writeManyRuns(dir, { n: 300, start: START, stepMs: STEP })
  const before = await EngineStore.open(dir)
  const pages = async (s: EngineStore) => [
    (await allPages(t, s, { limit: 40 })).ids,
    (await allPages(t, s, { state: 'waiting_approval', limit: 40 })).ids,
    (await allPages(t, s, { sop: 'door-open', state: 'failed', limit: 4 })).ids,
  ]
  const want = await pages(before)
  await before.close()
  // Make it a store of the index before the files: keys under ix! (what that code wrote, one
  // ordering per run is enough to see them cleared), its marker, and no index files.
  const db = new Level<string, string>(dir)
  await db.put(INDEX_MARKER, '1')
  const ops: { type: 'put'; key: string; value: string }[] = []
  for await (const k of db.keys({ gt: 'fin!', lt: 'fin!\xff' }))
    ops.push({ type: 'put', key: `${INDEX}a!0000000000!${k.slice(4)}`, value: '' })
  await db.batch(ops)
  await db.close()
  for (const f of await indexFiles(dir)) await rm(join(dir, 'history', f))
  const after = await EngineStore.open(dir)
  t.same(await pages(after), want, 'the same pages from the rebuilt index')
  await after.close()
  const check = await indexAgrees(dir)
  t.same(check.agree, { extra: [], missing: [] })
  t.equal(check.leveldbKeys, 0, 'the old keys are gone from LevelDB')
  const again = new Level<string, string>(dir)
  t.equal(await again.get(INDEX_MARKER), INDEX_VERSION, 'marked as indexed: the next open does not rebuild')
  await again.close()
})

/** The finished runs' index files beside the history log's segments. */
async function indexFiles(dir: string): Promise<string[]> {
  return (await readdir(join(dir, 'history'))).filter((f) => f.endsWith('.idx'))
}

/**
 * The index agrees with the runs: every page of every finished state holds exactly the stored
 * runs in that state, and all runs page once each. Reads the run ids raw from LevelDB (the
 * summaries and the unfinished runs' markers), then each run and the pages through the store.
 */
async function indexAgrees(dir: string) {
  // Opened once first, as the hub would: LevelDB is applied from the history log.
  await (await EngineStore.open(dir)).close()
  const db = new Level<string, string>(dir)
  const ids: string[] = []
  let leveldbKeys = 0
  for (const p of ['fin!', 'open!'])
    for await (const k of db.keys({ gt: p, lt: `${p}\xff` })) ids.push(k.slice(p.length))
  for await (const _ of db.keys({ gte: INDEX, lt: `${INDEX}\xff` })) leveldbKeys++
  await db.close()
  const store = await EngineStore.open(dir)
  const want = new Set<string>()
  const got = new Set<string>()
  const states = new Set<string>()
  const page = async (f: RunFilter) => {
    for (let cursor: string | undefined; ; ) {
      const p = await store.queryRuns({ ...f, limit: 500, ...(cursor ? { cursor } : {}) })
      for (const r of p.runs) got.add(`${f.state ?? '*'} ${r.id}`)
      if (p.next === null) return
      cursor = p.next
    }
  }
  try {
    for (const id of ids) {
      const r = await store.getRun(id)
      if (!r) continue
      states.add(r.state)
      want.add(`* ${id}`)
      if (isFinished(r.state)) want.add(`${r.state} ${id}`)
    }
    await page({})
    for (const state of RUN_STATES) if (isFinished(state)) await page({ state })
  } finally {
    await store.close()
  }
  return {
    runs: ids.length,
    states,
    leveldbKeys,
    agree: { extra: [...got].filter((k) => !want.has(k)), missing: [...want].filter((k) => !got.has(k)) },
  }
}
