// A store the hub cannot use stops `svc hub` (the real process) with one line naming the store,
// the file and the fix, and a non-zero exit (hub/stores/README.md, "Format versions and
// upgrades"): a store written by a newer svc (nothing in it changed), a damaged store (the fix:
// `svc hub repair`), a store another process holds.
import t from 'tap'
import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { cp, readFile, readdir, rm, writeFile } from 'node:fs/promises'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Level } from 'level'
import { FORMATS } from '../../hub/stores/format.ts'
import { type Teardown, tempDir } from '../helpers/tmp.ts'

const root = fileURLToPath(new URL('../..', import.meta.url))
const TODAY = join(root, 'test/fixtures/stores-today/data')

/** A home holding today's stores, and a hub.toml on free ports with nothing else to start. */
async function homeWithStores(t: Teardown): Promise<{ home: string; data: string }> {
  const home = await tempDir(t, 'svc-refuse-')
  const data = join(home, 'data')
  await cp(TODAY, data, { recursive: true })
  await writeFile(
    join(home, 'hub.toml'),
    `[hub]\nsops_dir = "${join(home, 'sops')}"\n[broker]\nport = 0\n[webhook]\nenabled = false\n[api]\nport = 0\n[console]\nenabled = false\n`,
  )
  return { home, data }
}

/** `svc hub` run to its end: exit code, stdout (the JSON log), stderr. */
function runHub(home: string): Promise<{ code: number | null; out: string; err: string }> {
  const proc = spawn(process.execPath, ['--import', 'tsx', join(root, 'cli/main.ts'), 'hub'], {
    cwd: root,
    env: { ...process.env, SVC_HOME: home },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  let err = ''
  proc.stdout.on('data', (d: Buffer) => void (out += d.toString()))
  proc.stderr.on('data', (d: Buffer) => void (err += d.toString()))
  return new Promise((resolve) => proc.once('close', (code) => resolve({ code, out, err })))
}

/** Every file under `dir` with a hash of its bytes. */
async function snapshot(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {}
  for (const e of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!e.isFile()) continue
    const p = join(e.parentPath, e.name)
    out[relative(dir, p)] = createHash('sha256')
      .update(await readFile(p))
      .digest('hex')
  }
  return out
}

async function setLevelKey(dir: string, key: string, value: string): Promise<void> {
  const db = new Level<string, string>(dir, { createIfMissing: false })
  await db.open()
  await db.put(key, value)
  await db.close()
}

t.test('an engine store of a newer format: one line, and nothing changed', async (t) => {
  const { home, data } = await homeWithStores(t)
  const newer = String(FORMATS.engine.current + 1)
  await setLevelKey(join(data, 'engine'), 'meta!layout', newer)
  const before = await snapshot(join(data, 'broker'))
  const r = await runHub(home)
  t.not(r.code, 0, 'the hub does not start')
  t.equal(
    r.err,
    `svc hub: could not start: ${join(data, 'engine')} (meta!layout): engine store format ${newer} was written by a newer svc (this one reads up to ${FORMATS.engine.current}); run that svc again, or restore a backup taken before the upgrade\n`,
    'one line: the store, where its format is recorded, the fix',
  )
  t.same((await readdir(data)).sort(), ['attest', 'broker', 'engine'], 'no copy taken')
  t.same(await snapshot(join(data, 'broker')), before, 'no other store written, not even its FORMAT')
  const db = new Level<string, string>(join(data, 'engine'), { createIfMissing: false })
  await db.open()
  t.equal(await db.get('meta!layout'), newer, 'the newer marker left as it was')
  await db.close()
})

t.test(
  'a broker store of a newer format: one line naming its FORMAT file, its bytes untouched',
  async (t) => {
    const { home, data } = await homeWithStores(t)
    await writeFile(join(data, 'broker', 'FORMAT'), '{"store":"broker","format":2}\n')
    const before = await snapshot(join(data, 'broker'))
    const r = await runHub(home)
    t.not(r.code, 0)
    t.match(
      r.err,
      /^svc hub: could not start: \S+\/broker\/FORMAT: broker store format 2 was written by a newer svc \(this one reads up to 1\); [^\n]+\n$/,
    )
    t.same(await snapshot(join(data, 'broker')), before, 'not a byte of the broker store changed')
  },
)

t.test('a damaged store: one line naming the file and `svc hub repair`', async (t) => {
  t.test('CURRENT gone from a broker store with data', async (t) => {
    const { home, data } = await homeWithStores(t)
    await rm(join(data, 'broker', 'CURRENT'))
    const before = await snapshot(join(data, 'broker'))
    const r = await runHub(home)
    t.not(r.code, 0)
    t.match(
      r.err,
      /^svc hub: could not start: \S+\/broker\/CURRENT: missing, though the broker store holds 000003\.log, MANIFEST-000002 \(opened as it is, it would start empty\); stop the hub and run `svc hub repair`\n$/,
    )
    t.same(await snapshot(join(data, 'broker')), before, 'LevelDB was not let start an empty store over it')
  })
  t.test('garbage in the engine store CURRENT', async (t) => {
    const { home, data } = await homeWithStores(t)
    await writeFile(join(data, 'engine', 'CURRENT'), 'garbage')
    const r = await runHub(home)
    t.not(r.code, 0)
    t.match(
      r.err,
      /^svc hub: could not start: \S+\/engine: the engine store will not open \(Corruption: CURRENT file does not end with newline\); stop the hub and run `svc hub repair`\n$/,
    )
  })
  t.test('CURRENT naming a MANIFEST that is not there (attest)', async (t) => {
    const { home, data } = await homeWithStores(t)
    await writeFile(join(data, 'attest', 'CURRENT'), 'MANIFEST-000099\n')
    const r = await runHub(home)
    t.not(r.code, 0)
    t.match(
      r.err,
      /^svc hub: could not start: \S+\/attest: the attest store will not open \(IO error: \S+MANIFEST-000099[^)]*\); stop the hub and run `svc hub repair`\n$/,
    )
  })
})

t.test('a store another process holds: one line saying another hub runs on this data dir', async (t) => {
  const { home, data } = await homeWithStores(t)
  const held = new Level<string, string>(join(data, 'engine'), { createIfMissing: false })
  await held.open()
  t.teardown(() => held.close())
  const r = await runHub(home)
  t.not(r.code, 0)
  t.match(
    r.err,
    /^svc hub: could not start: \S+\/engine\/LOCK: held by another process \([^)]*\): another svc hub is running on this data dir; stop it, or give this one its own data_dir\n$/,
  )
})
