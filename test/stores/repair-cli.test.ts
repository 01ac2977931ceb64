// `svc hub repair` through the real command line (hub/stores/README.md, "Repair"): stores written
// by the hub's code and then damaged as a disk or a person damages them (LevelDB's CURRENT and
// MANIFEST gone, a torn batch at the end of the history log) are repaired, the report says what
// was done and that nothing was lost, and every run is listed again by `svc sop runs`. A store
// held by a running hub is refused, and a store that still does not open exits 1.
import { existsSync } from 'node:fs'
import { appendFile, readdir, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { writeApiInfo } from '../../hub/api/token.ts'
import { openAttestStore } from '../../hub/attest/store.ts'
import { EngineStore } from '../../hub/engine/store.ts'
import { svcCli } from '../helpers/cli.ts'
import { tempDir } from '../helpers/tmp.ts'
import {
  type EngineWrite,
  attestInput,
  attestKeys,
  missingEngine,
  openBrokerPersistence,
  writeEngine,
} from './store-writes.ts'

interface Home {
  home: string
  data: string
  writes: EngineWrite[]
  svc: ReturnType<typeof svcCli>
}

/** A hub's data folder with its three stores written, each opened twice so LevelDB has tables. */
async function home(t: Test): Promise<Home> {
  const home = await tempDir(t, 'svc-repair-')
  const data = join(home, 'data')
  const engine = await EngineStore.open(join(data, 'engine'), { retention: false })
  const writes = await writeEngine(engine, 40)
  await engine.close()
  await (await EngineStore.open(join(data, 'engine'), { retention: false })).close()
  const broker = await openBrokerPersistence(join(data, 'broker'))
  for (let i = 0; i < 20; i++) await broker.store(`kept/${i}`, `value ${i}`)
  await broker.close()
  await (await openBrokerPersistence(join(data, 'broker'))).close()
  const attest = await openAttestStore(join(data, 'attest'))
  for (let i = 0; i < 10; i++) await attest.append(attestInput(i))
  await attest.close()
  await (await openAttestStore(join(data, 'attest'))).close()
  return { home, data, writes, svc: svcCli({ ...process.env, SVC_HOME: home }) }
}

/** LevelDB's CURRENT and every MANIFEST removed: the store will not open. */
async function dropManifest(dir: string): Promise<void> {
  for (const f of await readdir(dir)) if (f === 'CURRENT' || f.startsWith('MANIFEST-')) await rm(join(dir, f))
}

t.test('damaged stores are repaired, the report says so, and every run is listed again', async (t) => {
  const h = await home(t)
  for (const s of ['engine', 'broker', 'attest']) await dropManifest(join(h.data, s))
  const segment = join(h.data, 'engine', 'history', '00000001.seg')
  // A batch torn by a power cut: a frame header promising more than is there.
  await appendFile(segment, Buffer.from([0, 0, 1, 0, 1, 2, 3, 4, 0x5a, 0, 0]))

  const r = await h.svc('hub', 'repair')
  t.equal(r.code, 0, `repair succeeds (${r.err.trim()})`)
  t.match(r.out, `svc hub repair: ${h.data}`)
  const engine = r.out.slice(r.out.indexOf('engine '), r.out.indexOf('broker '))
  t.match(engine, /before {2}did not open: .*does not exist/, 'it says the engine store did not open')
  t.match(engine, /done {4}LevelDB repaired: 1 table kept; moved to .*lost: 1 write-ahead log/)
  t.match(engine, /history segment 00000001\.seg: the 11 bytes after its last whole batch are cut/)
  t.match(engine, /run index rebuilt from the history log: 40 runs \(20 not finished\), 0 kept triggers/)
  t.match(engine, /lost {4}nothing/)
  t.match(engine, /opens {3}yes/)
  const lost = await readdir(join(h.data, 'engine', 'lost'))
  t.ok(
    lost.some((f) => /^history-00000001\.seg\.from-\d+\.tail$/.test(f)),
    'the cut bytes are kept in lost/',
  )
  for (const s of ['broker', 'attest'])
    t.match(
      r.out,
      new RegExp(`${s} {2}.*\\n(.*\\n)*? {2}lost {4}nothing\\n {2}opens {3}yes`),
      `${s}: nothing lost`,
    )

  const runs = await h.svc('sop', 'runs', '--json', '--limit', '1000')
  t.equal(runs.code, 0, runs.err)
  t.equal(JSON.parse(runs.out).runs.length, 40, 'svc sop runs lists all 40 runs')
  const store = await EngineStore.open(join(h.data, 'engine'), { retention: false })
  t.same(await missingEngine(store, h.writes), [], 'each run reads back in its last state')
  await store.close()
  const broker = await openBrokerPersistence(join(h.data, 'broker'))
  t.equal((await broker.retained()).size, 20, 'the broker keeps its 20 retained messages')
  await broker.close()
  t.equal((await attestKeys(join(h.data, 'attest'))).size, 10, 'the attestation store keeps its 10 lines')

  const json = await h.svc('hub', 'repair', '--store', 'engine', '--json')
  t.equal(json.code, 0)
  const report = JSON.parse(json.out)
  t.match(report, { dataDir: h.data, ok: true, stores: [{ store: 'engine', opens: true, lost: [] }] })
  t.equal(report.stores.length, 1, '--store: that store only')
  t.match(report.stores[0].runs, { indexed: 40, unfinished: 20 })
})

t.test('a store a hub holds is refused, and nothing is changed', async (t) => {
  const h = await home(t)
  const held = await EngineStore.open(join(h.data, 'engine'), { retention: false })
  const r = await h.svc('hub', 'repair')
  await held.close()
  t.equal(r.code, 1)
  t.match(r.err, /the engine store .* is open in another process.*stop it first/)
  t.notOk(existsSync(join(h.data, 'engine', 'lost')), 'nothing was moved aside')

  // The running hub's local API info names this data folder.
  const paths = { apiInfo: join(h.home, 'hub-api.json') }
  await writeApiInfo('http://127.0.0.1:1', paths.apiInfo, { sopsDir: join(h.home, 'sops'), dataDir: h.data })
  const r2 = await h.svc('hub', 'repair')
  t.equal(r2.code, 1)
  t.match(r2.err, new RegExp(`a hub is running on ${h.data} \\(pid ${process.pid}, .*stop it first`))
  await rm(paths.apiInfo)
})

t.test('a store that still does not open after the repair exits 1 and says so', async (t) => {
  const h = await home(t)
  const history = join(h.data, 'engine', 'history')
  await rm(history, { recursive: true })
  await writeFile(history, 'not a folder')
  const r = await h.svc('hub', 'repair')
  t.equal(r.code, 1)
  t.match(r.out, /engine .*\n(.*\n)*? {2}opens {3}NO: /)
  t.match(r.out, /a store still does not open/)
  t.match(r.out, /broker .*\n(.*\n)*? {2}opens {3}yes/, 'the other stores are repaired all the same')
})

t.test('usage', async (t) => {
  const svc = svcCli({ ...process.env, SVC_HOME: await tempDir(t) })
  const help = await svc('hub', 'repair', '--help')
  t.equal(help.code, 0)
  t.match(help.out, /^usage: svc hub repair \[--config FILE\] \[--store NAME\] \[--json\]/)
  const bad = await svc('hub', 'repair', '--store', 'nope')
  t.equal(bad.code, 2)
  t.match(bad.err, /--store: must be one of engine, broker, attest/)
  const none = await svc('hub', 'repair')
  t.equal(none.code, 0, 'a home with no stores: nothing to repair')
  t.match(none.out, /engine .*\n {2}not there: nothing to repair/)
})
