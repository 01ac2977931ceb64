// The history log under SIGKILL (hub/engine/README.md, "The history log"): a real child engine
// is killed while retention drops segments, three times on the same folder, and once in the
// middle of a rebuild of the index. After each, every run waiting at its approval is still
// there, the held trigger still held, the once-only mark still holding, every listed run reads
// whole, and the index is the one the log rebuilds.
import { existsSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Level } from 'level'
import t, { type Test } from 'tap'
import { EngineStore } from '../../hub/engine/store.ts'
import { INDEX_MARKER, INDEX_VERSION } from '../../hub/engine/run-index.ts'
import { startReadyChild } from '../helpers/ready-child.ts'
import { tempDir } from '../helpers/tmp.ts'
import { BOUNDS, indexOf, openHistoryEngine } from './fixtures/history-world.ts'

const child = fileURLToPath(new URL('./fixtures/history-child.ts', import.meta.url))

interface Ids {
  gated: string[]
  held: string
  marked: string
}

/** Opens the folder as the hub would after the kill and checks what must have survived. */
async function survived(t: Test, dir: string, ids: Ids, when: string): Promise<void> {
  const opened = openHistoryEngine(dir)
  const clock = opened.clock
  const engine = await opened.engine
  try {
    for (const id of ids.gated)
      t.match(
        await engine.getRun(id),
        { state: 'waiting_approval' },
        `${when}: run ${id.slice(0, 8)} still waits`,
      )
    t.match(engine.keptTriggers(), [{ sop: 'gate', kind: 'held' }], `${when}: the held trigger is still held`)
    t.match(
      await engine.trigger('work', {
        type: 'manual',
        source: 'test',
        payload: { m: 1 },
        at: clock.now(),
        once: { key: 'k1', check: true },
      }),
      { duplicate: true, runId: ids.marked },
      `${when}: the once-only mark holds`,
    )
    // The pass retention makes when the store opens: waited out, so what is listed stays.
    await (engine as unknown as { store: EngineStore }).store.prune()
    const listed = (await engine.queryRuns({ limit: 1000 })).runs
    let whole = 0
    for (const r of listed) if (await engine.getRun(r.id)) whole++
    t.equal(whole, listed.length, `${when}: each of the ${listed.length} listed runs reads whole`)
  } finally {
    await engine.close()
  }
  const kept = await indexOf(join(dir, 'db'))
  const store = await EngineStore.open(join(dir, 'db'), { history: BOUNDS, now: clock.now })
  await store.rebuildIndex()
  await store.close()
  t.same(await indexOf(join(dir, 'db')), kept, `${when}: the index is the one the log rebuilds`)
}

t.test('SIGKILL while retention drops segments, and in the middle of a rebuild of the index', async (t) => {
  const dir = await tempDir(t, 'svc-history-crash-')
  for (let round = 1; round <= 3; round++) {
    rmSync(join(dir, 'ready'), { force: true })
    const proc = await startReadyChild(t, child, dir, 'retention to drop a segment', ['retention'])
    t.notOk(proc.exited(), `round ${round}: the child was still running`)
    // Retention goes on in the child (more segments are due); the kill lands somewhere in it.
    await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 40)))
    await proc.kill()
  }
  const ids = JSON.parse(readFileSync(join(dir, 'ids.json'), 'utf8')) as Ids
  t.notOk(existsSync(join(dir, 'db', 'history', '00000001.seg')), 'the first segment was dropped')
  await survived(t, dir, ids, 'after retention was killed')

  // How many segments retention left is its own business: a rebuild needs several to be killed
  // in the middle of, so runs of now (which retention keeps) are added until there are.
  {
    const opened = openHistoryEngine(dir)
    const engine = await opened.engine
    for (let i = 0; readdirSync(join(dir, 'db', 'history')).length < 3; i++) {
      await engine.trigger('work', {
        type: 'manual',
        source: 'test',
        payload: { fill: i },
        at: opened.clock.now(),
      })
      await engine.idle()
    }
    await engine.close()
  }
  // Mark the index stale, as an upgrade that changes it would, and kill the rebuild mid-way.
  const db = new Level<string, string>(join(dir, 'db'), { valueEncoding: 'utf8' })
  await db.put(INDEX_MARKER, '0')
  await db.close()
  t.ok(readdirSync(join(dir, 'db', 'history')).length > 1, 'several segments to rebuild from')
  rmSync(join(dir, 'ready'), { force: true })
  const proc = await startReadyChild(t, child, dir, 'the rebuild to read its first segment', ['rebuild'])
  t.notOk(proc.exited(), 'the child stopped in the middle of the rebuild')
  await proc.kill()
  const after = new Level<string, string>(join(dir, 'db'), { valueEncoding: 'utf8' })
  t.not(await after.get(INDEX_MARKER), INDEX_VERSION, 'the interrupted rebuild left the index marked stale')
  await after.close()
  await survived(t, dir, ids, 'after the rebuild was killed')
})
