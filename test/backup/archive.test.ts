// The backup archive with real stores in temp folders (hub/backup/README.md): an engine's runs,
// approval, held trigger and once-only mark and a LevelDB store go into an archive and come back
// through restore, the engine's records moved into a history log of their own; --no-history
// keeps only what the hub would go on with; an encrypted archive needs its passphrase; a changed
// byte, a cut-short archive and a wrong passphrase are refused with nothing put in place.
import { createWriteStream, existsSync } from 'node:fs'
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import t, { type Test as Tap } from 'tap'
import { Level } from 'level'
import { type BackupSource, writeArchive } from '../../hub/backup/archive.ts'
import { encryptStream } from '../../hub/backup/crypt.ts'
import { backupFiles } from '../../hub/backup/files.ts'
import { restoreArchive } from '../../hub/backup/restore.ts'
import { archiveStores } from '../../hub/backup/stores.ts'
import { createEngine } from '../../hub/engine/index.ts'
import { svcCli } from '../helpers/cli.ts'
import { type Teardown, tempDir } from '../helpers/tmp.ts'
import { call, event, memoryTools, sop, step } from '../engine/helpers.ts'

const SOPS = [
  sop({ name: 'work', maxConcurrent: 10, steps: [step(1, { calls: [call('echo')] })] }),
  sop({
    name: 'gate',
    admissionPolicy: 'hold',
    steps: [step(1, { requiresConfirmation: true, calls: [call('echo')] })],
  }),
]

/** A hub's home with its stores written: 5 finished runs, one at its approval, one held, a mark. */
async function hubHome(t: Teardown & { equal: Tap['equal'] }) {
  const home = await tempDir(t, 'svc-backup-')
  const data = join(home, 'data')
  await mkdir(join(home, 'sops', 'work'), { recursive: true })
  await writeFile(join(home, 'sops', 'work', 'SOP.md'), '# work\n')
  await writeFile(join(home, 'device.key'), `0x${'11'.repeat(32)}\n`, { mode: 0o600 })
  await writeFile(join(home, 'hub.token'), 'made again at each start\n', { mode: 0o600 })
  await mkdir(data, { recursive: true })
  await writeFile(join(data, 'cron-state.json'), '{"last":{}}\n')
  const engine = await createEngine({
    sops: SOPS,
    tools: memoryTools().registry,
    dbPath: join(data, 'engine'),
  })
  t.teardown(() => engine.close())
  for (let i = 0; i < 5; i++) await engine.trigger('work', event({ i }))
  await engine.trigger('work', { ...event({ m: 1 }), once: { key: 'k1', check: true } })
  await engine.trigger('gate', event({ g: 1 }))
  await engine.idle()
  t.equal((await engine.trigger('gate', event({ g: 2 }))).outcome, 'held')
  const broker = new Level<Buffer, Buffer>(join(data, 'broker'), {
    keyEncoding: 'buffer',
    valueEncoding: 'buffer',
  })
  await broker.open()
  t.teardown(() => broker.close())
  for (let i = 0; i < 300; i++)
    await broker.put(Buffer.from(`retained:t/${i}`), Buffer.from([i % 256, 0, 255]))
  const source = async (history: boolean): Promise<BackupSource> => ({
    files: await backupFiles({ home, dataDir: data, sopsDir: join(home, 'sops'), configFile: null }),
    stores: archiveStores(
      {
        engine: (o) => engine.backupRecords(o),
        levels: [{ name: 'broker', entries: () => broker.iterator() }],
      },
      history,
    ),
    history,
  })
  return { home, data, engine, broker, source }
}

async function archiveTo(file: string, src: BackupSource, passphrase?: string) {
  const out = new PassThrough()
  const sink = createWriteStream(file)
  const written = new Promise<void>((resolve) => sink.on('close', () => resolve()))
  ;(passphrase ? out.pipe(await encryptStream(passphrase)) : out).pipe(sink)
  const manifest = await writeArchive(out, src)
  await written
  return manifest
}

/** A new home's places, as `svc hub restore` gives them. */
const placesIn = (to: string) => ({ home: to, dataDir: join(to, 'data'), sopsDir: join(to, 'sops') })

async function restoredEngine(t: Teardown, home: string) {
  const engine = await createEngine({
    sops: SOPS,
    tools: memoryTools().registry,
    dbPath: join(home, 'data', 'engine'),
  })
  t.teardown(() => engine.close())
  return engine
}

t.test(
  'an archive restored: every run, the approval, the held trigger, the mark and the broker',
  async (t) => {
    const h = await hubHome(t)
    const file = join(h.home, '..', `a-${process.pid}.tar.gz`)
    const manifest = await archiveTo(file, await h.source(true))
    t.match(manifest.stores, { broker: { entries: 300, parts: 1 } })
    t.same(
      manifest.files.filter((f) => !f.path.startsWith('stores/')).map((f) => f.path),
      ['home/device.key', 'data/cron-state.json', 'sops/work/SOP.md'],
      "the home's own files (not the token made at each start), the data folder's, the SOPs",
    )
    await h.engine.close()

    const to = await tempDir(t, 'svc-restored-')
    const r = await restoreArchive(file, placesIn(to), null)
    t.same(r.runs, { finished: 6, unfinished: 1 })
    t.equal(r.entries.broker, 300)
    t.equal(await readFile(join(to, 'device.key'), 'utf8'), `0x${'11'.repeat(32)}\n`)
    t.equal(await readFile(join(to, 'sops', 'work', 'SOP.md'), 'utf8'), '# work\n')
    t.notOk(existsSync(join(to, 'hub.token')), 'the token is not restored: the hub makes one')
    t.same(
      (await readdir(to)).filter((n) => n.startsWith('.restore')),
      [],
      'no staging left behind',
    )

    const engine = await restoredEngine(t, to)
    t.same(
      (await engine.admissions()).map((a) => `${a.sop} ${a.outcome}`),
      [...Array(6).fill('work started'), 'gate started', 'gate held'],
      'the admission records, which the log alone held, in order',
    )
    t.equal((await engine.queryRuns({ sop: 'work', state: 'completed' })).runs.length, 6)
    const [waiting] = engine.pending()
    t.match(waiting, { sop: 'gate', state: 'waiting_approval' }, 'the approval still waits')
    t.match(engine.keptTriggers(), [{ sop: 'gate', kind: 'held' }], 'the held trigger is still held')
    t.match(
      await engine.trigger('work', { ...event({ m: 1 }), once: { key: 'k1', check: true } }),
      { duplicate: true },
      'the once-only mark still holds',
    )
    t.match(await engine.approve(waiting!.id), { ok: true })
    await engine.idle()
    t.equal((await engine.getRun(waiting!.id))?.state, 'completed')
    t.ok(
      (await readdir(join(to, 'data', 'engine', 'history'))).length >= 1,
      'the records are in a history log',
    )

    const broker = new Level<string, Buffer>(join(to, 'data', 'broker'), { valueEncoding: 'buffer' })
    t.teardown(() => broker.close())
    t.same(await broker.get('retained:t/7'), Buffer.from([7, 0, 255]), 'the broker entry byte for byte')
  },
)

t.test('--no-history: unfinished runs, approvals, held triggers and marks, no finished runs', async (t) => {
  const h = await hubHome(t)
  const file = join(h.home, '..', `n-${process.pid}.tar.gz`)
  const manifest = await archiveTo(file, await h.source(false))
  t.equal(manifest.history, false)
  await h.engine.close()
  const to = await tempDir(t, 'svc-restored-')
  const r = await restoreArchive(file, placesIn(to), null)
  t.same(r.runs, { finished: 0, unfinished: 1 })
  const engine = await restoredEngine(t, to)
  t.equal((await engine.queryRuns({ sop: 'work' })).runs.length, 0, 'no finished run')
  t.same(await engine.admissions(), [], 'no admission record')
  t.match(engine.pending(), [{ sop: 'gate', state: 'waiting_approval' }])
  t.match(engine.keptTriggers(), [{ sop: 'gate', kind: 'held' }])
  t.match(await engine.trigger('work', { ...event({ m: 1 }), once: { key: 'k1', check: true } }), {
    duplicate: true,
  })
})

t.test('encrypted: restored with its passphrase, refused without it or with another', async (t) => {
  const h = await hubHome(t)
  const file = join(h.home, '..', `e-${process.pid}.tar.gz.enc`)
  await archiveTo(file, await h.source(true), 'correct horse battery staple')
  const bytes = await readFile(file)
  t.notOk(bytes.includes(Buffer.from('retained:t/7')), 'no store key readable in the file')
  const places = async () => {
    const to = await tempDir(t, 'svc-restored-')
    return placesIn(to)
  }
  const none = await places()
  await t.rejects(
    restoreArchive(file, none, null),
    /is encrypted: give its passphrase with --passphrase-env VAR/,
  )
  const wrong = await places()
  await t.rejects(restoreArchive(file, wrong, 'wrong'), /the passphrase is wrong/)
  t.same(await readdir(wrong.home), [], 'nothing put in place')
  const right = await places()
  const r = await restoreArchive(file, right, 'correct horse battery staple')
  t.same(r.runs, { finished: 6, unfinished: 1 })
})

t.test('a changed byte or a cut-short archive is refused, with nothing put in place', async (t) => {
  const h = await hubHome(t)
  const file = join(h.home, '..', `d-${process.pid}.tar.gz`)
  await archiveTo(file, await h.source(true))
  const good = await readFile(file)
  const cases: [string, Buffer, RegExp][] = [
    ['cut short', good.subarray(0, Math.floor(good.length * 0.6)), /not a readable svc backup|cut short/],
    [
      'a byte changed',
      Buffer.from(good.map((b, i) => (i === Math.floor(good.length / 2) ? b ^ 0x40 : b))),
      /not a readable svc backup|checksum/,
    ],
  ]
  for (const [what, bytes, error] of cases) {
    const bad = `${file}.${what.replace(/ /g, '-')}`
    await writeFile(bad, bytes)
    const to = await tempDir(t, 'svc-restored-')
    await t.rejects(restoreArchive(bad, placesIn(to), null), error, what)
    t.same(await readdir(to), [], `${what}: nothing put in place`)
  }
})

t.test('svc hub backup of a home with no hub in it refuses, writing nothing', async (t) => {
  const home = await tempDir(t, 'svc-empty-home-')
  const out = join(home, 'b.tar.gz')
  const r = await svcCli({ ...process.env, SVC_HOME: home }, home)('hub', 'backup', '--out', out)
  t.equal(r.code, 1)
  t.match(
    r.err,
    /nothing to back up: .* holds no hub \(no hub\.toml, device key, SOPs or stores in .*\); set SVC_HOME to the hub's home/,
  )
  t.notOk(existsSync(out), 'no archive')
  t.same(await readdir(home), [], 'nothing written in the home')
})
