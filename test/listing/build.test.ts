// Building a listing from attested lines: the refusals name the line and change
// nothing; a good build writes the three files with the manifest matching the data line by line.
import { existsSync } from 'node:fs'
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { manifestFromFiles } from '../../hub/listing/build.ts'
import { createListing } from '../../hub/listing/create.ts'
import { listingsDir, loadAll } from '../../hub/listing/queue.ts'
import { lineHash } from '../../records/index.ts'
import { tempDir } from '../helpers/tmp.ts'
import { FIELDS, opLine, storeWith } from './fixtures.ts'

const MARKET = 'http://127.0.0.1:9'

t.test('a listing of attested lines: three files, manifest row i = line i', async (t) => {
  const { store, home } = await storeWith(t, ['attested', 'attested', 'attested', 'pending'])
  const r = await createListing({
    home,
    fields: FIELDS,
    range: { to: 3 },
    market: MARKET,
    store,
    agentId: '7',
  })
  if (!r.ok) return t.fail(r.error)
  t.equal(r.entry.state, 'queued')
  t.equal(r.entry.rows, 3)
  const data = await readFile(join(r.dir, 'operations.jsonl'), 'utf8')
  const reqs = (await readFile(join(r.dir, 'operation-requests.txt'), 'utf8')).trim().split('\n')
  const manifest = JSON.parse(await readFile(join(r.dir, 'manifest.json'), 'utf8')) as {
    version: number
    chainId: number
    agentId: string
    rows: { paramsHash: string; requestHash: string }[]
  }
  t.same(data.trimEnd().split('\n'), [opLine(0), opLine(1), opLine(2)], 'data lines in store order')
  t.equal(manifest.version, 1)
  t.equal(manifest.chainId, 10143)
  t.equal(manifest.agentId, '7')
  for (let i = 0; i < 3; i++) {
    t.equal(manifest.rows[i]!.paramsHash, lineHash(opLine(i)), `row ${i} paramsHash`)
    t.equal(manifest.rows[i]!.requestHash, (await store.get(i))!.requestHash, `row ${i} requestHash`)
    t.equal(reqs[i], manifest.rows[i]!.requestHash, `request line ${i + 1}`)
  }
  const all = await loadAll(home)
  t.equal(all.length, 1, 'one listing queued')
})

t.test('a line not attested yet in the range: refused with its line, nothing queued', async (t) => {
  const { store, home } = await storeWith(t, ['attested', 'attested', 'requested', 'attested'])
  const r = await createListing({ home, fields: FIELDS, range: {}, market: MARKET, store, agentId: '7' })
  t.same(r, {
    ok: false,
    code: 'BAD_INPUT',
    error: 'operation-requests.txt line 3: blank (line not attested yet)',
  })
  t.same(await readdir(listingsDir(home)).catch(() => []), [], 'no folder left behind')
  const later = await createListing({
    home,
    fields: FIELDS,
    range: { from: 1 },
    market: MARKET,
    store,
    agentId: '7',
  })
  t.same(
    later,
    {
      ok: false,
      code: 'BAD_INPUT',
      error: 'operation-requests.txt line 2: blank (line not attested yet) (attested line 3)',
    },
    'a later range names the file line and the store line',
  )
})

t.test('an empty range is refused', async (t) => {
  const { store, home } = await storeWith(t, ['attested'])
  const r = await createListing({
    home,
    fields: FIELDS,
    range: { from: 5 },
    market: MARKET,
    store,
    agentId: '7',
  })
  t.same(r, { ok: false, code: 'BAD_INPUT', error: 'no attested lines in the range: nothing to list' })
})

t.test('hand-made record files: blank, duplicate, different counts, each with its line', async (t) => {
  const dir = await tempDir(t)
  const h = (n: number) => `0x${n.toString(16).padStart(64, '0')}`
  const cases: [string, string, string][] = [
    [
      `${opLine(0)}\n${opLine(1)}\n`,
      `${h(1)}\n\n`,
      'operation-requests.txt line 2: blank (line not attested yet)',
    ],
    [
      `${opLine(0)}\n${opLine(1)}\n${opLine(2)}\n`,
      `${h(1)}\n${h(2)}\n${h(1)}\n`,
      'operation-requests.txt line 3: same request hash as line 1',
    ],
    [
      `${opLine(0)}\n${opLine(1)}\n`,
      `${h(1)}\n`,
      'operations.jsonl has 2 lines but operation-requests.txt has 1',
    ],
    [`${opLine(0)}\n`, `0x1234\n`, 'operation-requests.txt line 1: not a 32-byte hex hash'],
  ]
  for (const [data, reqs, error] of cases) {
    await mkdir(dir, { recursive: true })
    await writeFile(join(dir, 'operations.jsonl'), data)
    await writeFile(join(dir, 'operation-requests.txt'), reqs)
    t.same(await manifestFromFiles(dir, '1'), { ok: false, code: 'BAD_INPUT', error }, error)
    t.notOk(existsSync(join(dir, 'manifest.json')), 'no manifest written')
  }
})

t.test('bad fields and images are refused before anything is written', async (t) => {
  const { store, home } = await storeWith(t, ['attested'])
  const bad: [Record<string, string>, RegExp][] = [
    [{ ...FIELDS, title: 'x'.repeat(81) }, /^title: at most 80 characters/],
    [{ ...FIELDS, title: 'a\nb' }, /^title: must not contain line breaks/],
    [{ ...FIELDS, summary: 's'.repeat(181) }, /^summary: at most 180/],
    [{ ...FIELDS, description: 'short' }, /^description: 20 to 8000 characters/],
    [{ ...FIELDS, machineType: 'toaster' }, /^machineType: must be one of/],
    [{ ...FIELDS, license: 'free' }, /^license: must be one of/],
    [{ ...FIELDS, priceNative: '0' }, /^priceNative: must be greater than zero/],
    [{ ...FIELDS, priceNative: '-1' }, /^priceNative: must be a decimal/],
  ]
  for (const [fields, re] of bad) {
    const r = await createListing({ home, fields, range: {}, market: MARKET, store, agentId: '1' })
    t.match(r, { ok: false, code: 'BAD_INPUT', error: re }, String(re))
  }
  const { title: _omit, ...noTitle } = FIELDS
  t.same(await createListing({ home, fields: noTitle, range: {}, market: MARKET, store, agentId: '1' }), {
    ok: false,
    code: 'BAD_INPUT',
    error: 'title: required',
  })
  const txt = join(home, 'cover.png')
  await writeFile(txt, 'not an image')
  t.same(
    await createListing({
      home,
      fields: FIELDS,
      range: {},
      market: MARKET,
      store,
      agentId: '1',
      imagePath: txt,
    }),
    { ok: false, code: 'BAD_INPUT', error: '--image cover.png: not a JPEG, PNG or WebP file' },
  )
  t.match(
    await createListing({
      home,
      fields: FIELDS,
      range: {},
      market: MARKET,
      store,
      agentId: '1',
      imagePath: join(home, 'nope.jpg'),
    }),
    { ok: false, code: 'NOT_FOUND', error: /nope\.jpg: no such file/ },
  )
  t.same(await readdir(listingsDir(home)).catch(() => []), [], 'nothing queued')

  const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0])
  const good = join(home, 'cover.bin')
  await writeFile(good, png)
  const r = await createListing({
    home,
    fields: FIELDS,
    range: {},
    market: MARKET,
    store,
    agentId: '1',
    imagePath: good,
  })
  if (!r.ok) return t.fail(r.error)
  t.same(r.entry.image, { file: 'image.png', type: 'image/png' }, 'type by magic bytes, not by name')
  t.same(await readFile(join(r.dir, 'image.png')), png, 'image copied into the listing')
})

t.test(
  'a queued listing whose files were removed by hand: failed with the reason, others still posted',
  async (t) => {
    const { store, home } = await storeWith(t, ['attested'])
    const r = await createListing({ home, fields: FIELDS, range: {}, market: MARKET, store, agentId: '1' })
    if (!r.ok) return t.fail(r.error)
    const { rm } = await import('node:fs/promises')
    await rm(join(r.dir, 'operations.jsonl'))
    const { syncListings } = await import('../../hub/listing/sync.ts')
    const s = await syncListings(
      {
        home,
        key: async () => 'svc_' + 'a'.repeat(43),
        log: { info: () => undefined, warn: () => undefined },
      },
      { force: true },
    )
    t.equal(s.failed, 1)
    const [e] = await loadAll(home)
    t.match(e, { ok: true, entry: { state: 'failed', lastError: /listing files in .*operations\.jsonl/ } })
  },
)
