// `svc key` and `svc listing` through the CLI dispatcher: outputs, exit codes, file modes, and
// the draft path when the running hub holds the attestation store.
import { chmod, readFile, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { svcCli } from '../helpers/cli.ts'
import { loadAll } from '../../hub/listing/queue.ts'
import { syncListings } from '../../hub/listing/sync.ts'
import { tempDir } from '../helpers/tmp.ts'
import { FIELDS, storeWith } from './fixtures.ts'

function cli(home: string, cwd = home) {
  return svcCli({ ...process.env, SVC_HOME: home }, cwd)
}

const KEY = 'svc_' + 'K'.repeat(43)

t.test('svc key set / show', async (t) => {
  const home = await tempDir(t)
  const svc = cli(home)
  const file = join(home, 'market.key')
  let r = await svc('key', 'set', KEY, '--market', 'http://127.0.0.1:8787/some/path')
  t.equal(r.code, 0, r.err)
  t.equal((await stat(file)).mode & 0o777, 0o600, 'mode 0600')
  t.equal(await readFile(file, 'utf8'), KEY + '\n')
  t.notMatch(r.out, KEY, 'the key is not echoed whole')
  r = await svc('key', 'show')
  t.equal(r.code, 0)
  t.match(r.out, 'market  http://127.0.0.1:8787')
  t.notMatch(r.out, KEY, 'show prints a prefix only')

  await chmod(file, 0o644)
  r = await svc('key', 'set', 'svc_' + 'z'.repeat(43))
  t.equal(r.code, 0)
  t.equal((await stat(file)).mode & 0o777, 0o600, 'a loosened file is tightened again')

  for (const [args, code, re] of [
    [['key', 'set', 'abc'], 1, /starts with "svc_"/],
    [['key', 'set', 'svc_short'], 1, /16 to 200/],
    [['key', 'set', 'svc_' + 'a'.repeat(20) + '!'], 1, /letters, digits/],
    [['key', 'set'], 2, /one argument, or --stdin/],
    [['key', 'set', KEY, '--market', 'ftp://x'], 2, /--market: .*http or https/],
    [['key', 'set', KEY, '--bogus'], 2, /bogus/],
    [['key', 'rotate'], 2, /unknown command "rotate"/],
  ] as const) {
    r = await svc(...args)
    t.equal(r.code, code, args.join(' '))
    t.match(r.err, re, r.err.trim())
    t.equal(r.err.trim().split('\n').length, 1, 'one line')
  }
  t.equal(await readFile(file, 'utf8'), 'svc_' + 'z'.repeat(43) + '\n', 'refusals left the stored key alone')
})

t.test('svc listing: usage errors, empty status, no key', async (t) => {
  const home = await tempDir(t)
  const svc = cli(home)
  let r = await svc('listing', 'status')
  t.equal(r.code, 0)
  t.match(r.out, 'no listings')
  r = await svc('listing', 'create', '--title', 'x')
  t.equal(r.code, 2)
  t.match(r.err, /no market: pass --market URL/)
  r = await svc('listing', 'create', '--market', 'nope')
  t.equal(r.code, 2)
  t.match(r.err, /--market: .*not an absolute URL/)
  r = await svc('listing', 'create', '--market', 'http://127.0.0.1:9', '--from', '3', '--to', '2')
  t.equal(r.code, 2)
  t.match(r.err, /--to must not be before --from/)
  r = await svc('listing', 'sync')
  t.equal(r.code, 1)
  t.match(r.err, /no market key: store one with svc key set/)
  r = await svc('listing', 'publish')
  t.equal(r.code, 2)
  t.match(r.err, /unknown command "publish"/)
})

t.test('svc listing create while the hub holds the store: a draft the hub builds', async (t) => {
  const { store, home } = await storeWith(t, ['attested', 'attested'])
  const svc = cli(home)
  // The fixture's store lives where the CLI looks (SVC_HOME/data/attest) and is held open here,
  // as the running hub holds it.
  const args = [
    'listing',
    'create',
    '--title',
    FIELDS.title,
    '--summary',
    FIELDS.summary,
    '--description',
    FIELDS.description,
    '--machine-type',
    'vending',
    '--license',
    'research',
    '--price',
    '0.5',
    '--market',
    'http://127.0.0.1:9',
    '--agent',
    '4',
  ]
  let r = await svc(...args)
  t.equal(r.code, 0, r.err)
  t.match(r.out, /as a draft: the running hub builds and posts it/)
  let all = await loadAll(home)
  t.match(all, [{ ok: true, entry: { state: 'draft', rows: null } }])

  // --preview: the first N lines become samples on the listing page; 0 to 5, else a usage error.
  r = await svc(...args, '--preview', '9')
  t.equal(r.code, 2)
  t.match(r.err, '--preview must be a whole number from 0 to 5 (got "9")')
  t.equal((await loadAll(home)).length, 1, 'a refused --preview adds nothing')
  r = await svc(...args, '--preview', '2')
  t.equal(r.code, 0, r.err)
  all = await loadAll(home)
  t.same(
    all.map((l) => (l.ok ? (l.entry.preview ?? 0) : -1)).sort(),
    [0, 2],
    'the entry keeps the sample count it will post as the preview field',
  )
  const withPreview = all.find((l) => l.ok && l.entry.preview === 2)!
  const { rm } = await import('node:fs/promises')
  await rm(withPreview.dir, { recursive: true })

  r = await svc('listing', 'create', ...args.slice(2).map((a) => (a === 'vending' ? 'toaster' : a)))
  t.equal(r.code, 1)
  t.match(r.err, /^svc listing: refused: machineType: must be one of/)
  t.equal((await loadAll(home)).length, 1, 'a refused listing adds nothing')

  const s = await syncListings({
    home,
    key: async () => null,
    builder: { store, agentId: '4' },
    log: { info: () => undefined, warn: () => undefined },
  })
  t.equal(s.built, 1, 'the hub pass builds the draft')
  all = await loadAll(home)
  t.match(all, [{ ok: true, entry: { state: 'queued', rows: 2 } }])
  const dir = all[0]!.dir
  const manifest = JSON.parse(await readFile(join(dir, 'manifest.json'), 'utf8')) as {
    agentId: string
    rows: unknown[]
  }
  t.equal(manifest.agentId, '4')
  t.equal(manifest.rows.length, 2)

  r = await svc('listing', 'status')
  t.match(r.out, /queued .* 2 rows {2}0 tries {2}Vend1 dispenses {2}waiting to post/)
  r = await svc('listing', 'status', '--json')
  t.match(JSON.parse(r.out), [{ state: 'queued', fields: { title: 'Vend1 dispenses', priceNative: '0.5' } }])

  // A half-written folder is reported by status and skipped by sync, not fatal.
  await writeFile(join(dir, '..', 'junk'), 'x')
  const { mkdir } = await import('node:fs/promises')
  await mkdir(join(dir, '..', '0-broken'))
  await writeFile(join(dir, '..', '0-broken', 'listing.json'), '{ nope')
  r = await svc('listing', 'status')
  t.equal(r.code, 0)
  t.match(r.out, /^\? .*0-broken\/listing\.json/m)
})

t.test('svc key set --stdin (a real child process): the key never on the command line', async (t) => {
  const { spawnSync } = await import('node:child_process')
  const { fileURLToPath } = await import('node:url')
  const home = await tempDir(t)
  const bin = fileURLToPath(new URL('../../bin/svc.js', import.meta.url))
  const r = spawnSync(process.execPath, [bin, 'key', 'set', '--stdin'], {
    input: `${KEY}\n`,
    env: { ...process.env, SVC_HOME: home },
    encoding: 'utf8',
  })
  t.equal(r.status, 0, r.stderr)
  t.equal(await readFile(join(home, 'market.key'), 'utf8'), KEY + '\n')
  t.equal((await stat(join(home, 'market.key'))).mode & 0o777, 0o600)
  const bad = spawnSync(process.execPath, [bin, 'key', 'set', '--stdin'], {
    input: 'not-a-key\n',
    env: { ...process.env, SVC_HOME: home },
    encoding: 'utf8',
  })
  t.equal(bad.status, 1)
  t.equal(bad.stderr, 'svc key: a market key starts with "svc_"\n', 'one line, no stack')
  t.equal(await readFile(join(home, 'market.key'), 'utf8'), KEY + '\n', 'unchanged')
})
