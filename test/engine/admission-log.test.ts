// Where admission records live (hub/engine/README.md, "The history log"): in the log alone, read
// back newest first from it, across a restart; LevelDB never holds a key for one. An older store's
// records, whether LevelDB held a locator (the format before this) or the record itself (before
// the history log), move into the log when it opens, and a crash part-way reads back once.
import { cp } from 'node:fs/promises'
import { join } from 'node:path'
import { Level } from 'level'
import t from 'tap'
import { createEngine } from '../../hub/engine/index.ts'
import { ADM } from '../../hub/engine/store-layout.ts'
import { tempDir } from '../helpers/tmp.ts'
import { call, event, memoryTools, sop, step } from './helpers.ts'
import { FIXTURE_SOPS } from '../fixtures/engine-store-v1/sops.ts'

const FIXTURES = join(import.meta.dirname, '../fixtures')

/** The admission keys LevelDB holds, with their values. */
async function admissionKeys(dir: string): Promise<[string, string][]> {
  const db = new Level<string, string>(dir, { valueEncoding: 'utf8' })
  await db.open()
  try {
    const out: [string, string][] = []
    for await (const kv of db.iterator({ gt: ADM, lt: `${ADM}\xff` })) out.push(kv)
    return out
  } finally {
    await db.close()
  }
}

t.test('admission records are in the log alone, and read back newest first after a restart', async (t) => {
  const dir = join(await tempDir(t, 'svc-adm-log-'), 'engine')
  const tools = memoryTools()
  const S = sop({ admissionPolicy: 'drop', maxConcurrent: 1, steps: [step(1, { calls: [call('echo')] })] })
  const first = await createEngine({ sops: [S], tools: tools.registry, dbPath: dir })
  const outcomes: string[] = []
  for (let i = 0; i < 5; i++) {
    outcomes.push((await first.trigger('test-sop', event({ i }))).outcome)
    await first.idle()
  }
  outcomes.push((await first.trigger('nope', event())).outcome)
  const recorded = await first.admissions()
  t.same(
    recorded.map((r) => r.outcome),
    outcomes,
    'every decision, in the order it was made',
  )
  t.match(recorded.at(-1), { sop: 'nope', outcome: 'dropped', reason: /no SOP named "nope"/ })
  await first.close()
  t.same(await admissionKeys(dir), [], 'LevelDB holds no admission key')

  const second = await createEngine({ sops: [S], tools: tools.registry, dbPath: dir })
  t.teardown(() => second.close())
  t.same(await second.admissions(), recorded, 'the same records after a restart')
  t.same(await second.admissions(2), recorded.slice(-2), 'a limit gives the newest')
})

for (const [name, path, kind] of [
  ['the format before this one', 'stores-today/data/engine', 'a locator'],
  ['before the history log', 'engine-store-v1/store', 'the record itself'],
] as const) {
  t.test(
    `a store from ${name} (LevelDB held ${kind}): its admission records move into the log`,
    async (t) => {
      const dir = join(await tempDir(t, 'svc-adm-older-'), 'engine')
      await cp(join(FIXTURES, path), dir, { recursive: true })
      const before = await admissionKeys(dir)
      t.equal(before.length, 9, "the fixture holds an admission record for each of the story's nine triggers")
      t.equal(
        before.every(([, v]) => v.startsWith('@')),
        kind === 'a locator',
        `each held as ${kind}`,
      )
      const engine = await createEngine({ sops: FIXTURE_SOPS, tools: memoryTools().registry, dbPath: dir })
      const recs = await engine.admissions()
      t.same(
        recs.map((r) => `${r.sop} ${r.outcome}`),
        [...Array(5).fill('press started'), 'breaks started', 'press started', 'gate started', 'gate held'],
        'every record, in order',
      )
      await engine.close()
      t.same(await admissionKeys(dir), [], 'and LevelDB holds no key for them')
    },
  )
}

t.test('a crash after the records were logged, before their keys went: read back once', async (t) => {
  const dir = join(await tempDir(t, 'svc-adm-twice-'), 'engine')
  await cp(join(FIXTURES, 'engine-store-v1/store'), dir, { recursive: true })
  const keys = await admissionKeys(dir)
  const first = await createEngine({ sops: FIXTURE_SOPS, tools: memoryTools().registry, dbPath: dir })
  const moved = await first.admissions()
  await first.close()
  // The keys' deletion, not synced, lost: the next open logs the records a second time.
  const db = new Level<string, string>(dir, { valueEncoding: 'utf8' })
  await db.batch(keys.map(([key, value]) => ({ type: 'put' as const, key, value })))
  await db.close()

  const second = await createEngine({ sops: FIXTURE_SOPS, tools: memoryTools().registry, dbPath: dir })
  t.equal(moved.length, 9)
  t.same(await second.admissions(), moved, 'each record once')
  await second.close()
  t.same(await admissionKeys(dir), [], 'and their keys gone')
})
