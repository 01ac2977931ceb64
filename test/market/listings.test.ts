// POST /api/agent/listings and the listing reads: every field and limit on both sides of its
// edge, against a real market and a real anvil chain. A rejection stores nothing.
import t, { type Test } from 'tap'
import { keccak256, toHex } from 'viem'
import { startDevChain } from '../../chain/dev.ts'
import { lineHash } from '../../records/index.ts'
import {
  type Dataset,
  api,
  dataset,
  goodFields,
  issueKey,
  postListing,
  signIn,
  startMarket,
} from './market-helpers.ts'

const dev = await startDevChain()
t.teardown(() => dev.stop())
const { url, market } = await startMarket(t, dev)
const cookie = await signIn(url, dev.accounts.owner.privateKey)
const issued = await issueKey(url, cookie, dev.accounts.owner.privateKey, dev.agentId)
const key = issued.json.key as string

const MiB20 = 20 * 1024 * 1024
const listingCount = async (): Promise<number> => {
  let n = 0
  for await (const _ of market.ctx.db.listings.values()) n++
  return n
}

/** A dataset of `n` lines whose data file is exactly `bytes` long (trailing newline included). */
function exactSize(bytes: number, n: number): Dataset {
  const lines: string[] = []
  const each = Math.floor(bytes / n) - 1
  for (let i = 0; i < n; i++) {
    const head = `{"i":${i},"pad":"`
    lines.push(head + 'x'.repeat(each - head.length - 2) + '"}')
  }
  const total = lines.reduce((a, l) => a + l.length + 1, 0)
  const last = lines[n - 1]!
  lines[n - 1] = last.slice(0, -2) + 'x'.repeat(bytes - total) + '"}'
  const requestHashes = lines.map((_l, i) => keccak256(toHex(`exact:${bytes}:${i}`)))
  const data = lines.join('\n') + '\n'
  return {
    lines,
    data,
    requestHashes,
    manifest: {
      version: 1,
      chainId: 10143,
      agentId: dev.agentId,
      rows: lines.map((l, i) => ({ paramsHash: lineHash(l), requestHash: requestHashes[i]! })),
    },
  }
}

async function refused(
  t: Test,
  what: string,
  status: number,
  pattern: RegExp,
  parts: Parameters<typeof postListing>[3],
  ds: Dataset | null = dataset(3, dev.agentId),
  k: string | null = key,
) {
  const before = await listingCount()
  const r = await postListing(url, k, ds, parts)
  t.equal(r.status, status, `${what}: status ${status}`)
  t.match(r.json.error, pattern, `${what}: says what was wrong (${String(r.json.error)})`)
  t.equal(await listingCount(), before, `${what}: nothing stored`)
}

async function accepted(
  t: Test,
  what: string,
  parts: Parameters<typeof postListing>[3],
  ds: Dataset = dataset(3, dev.agentId),
) {
  const r = await postListing(url, key, ds, parts)
  t.equal(r.status, 201, `${what}: accepted (${JSON.stringify(r.json).slice(0, 200)})`)
  return r.json
}

const f = (over: Record<string, string>): Record<string, string> => ({ ...goodFields, ...over })
const without = (k: string): Record<string, string> =>
  Object.fromEntries(Object.entries(goodFields).filter(([n]) => n !== k))

t.test(
  'a good listing: 201 {slug, url, status} without CIDs; readable by slug and in the list',
  async (t) => {
    const ds = dataset(5, dev.agentId)
    const r = await postListing(url, key, ds)
    t.equal(r.status, 201)
    t.same(Object.keys(r.json).sort(), ['slug', 'status', 'url'])
    t.equal(r.json.status, 'listed')
    t.equal(r.json.url, `/marketplace/${r.json.slug}`)
    t.match(r.json.slug, /^snack-machine-vends-week-12-[a-z0-9]{6}$/)
    t.notMatch(JSON.stringify(r.json), /baf/, 'no CIDs')
    const one = await api(url, `/api/marketplace/listings/${r.json.slug}`)
    t.equal(one.status, 200)
    t.equal(one.json.title, goodFields.title)
    t.equal(one.json.priceWei, '50000000000000000')
    t.equal(one.json.priceNative, '0.05')
    t.equal(one.json.payout, dev.accounts.payout.address, 'payout from market config, stored on the listing')
    t.equal(one.json.rows, 5)
    t.equal(one.json.agentId, dev.agentId)
    t.notMatch(JSON.stringify(one.json), /baf[a-z0-9]{20}/, 'listing reads carry no CIDs')
    const stored = (await market.ctx.db.listings.get(r.json.slug as string))!
    t.match(stored.dataCid, /^baf/)
    t.equal((await api(url, '/api/marketplace/listings/no-such-listing')).status, 404)
  },
)

t.test('authorization', async (t) => {
  await refused(t, 'no key', 401, /Authorization/, {}, dataset(2, dev.agentId), null)
  await refused(t, 'malformed key', 401, /not an agent key/, {}, dataset(2, dev.agentId), 'svc_short')
  await refused(
    t,
    'unknown key',
    401,
    /unknown agent key/,
    {},
    dataset(2, dev.agentId),
    'svc_' + 'A'.repeat(43),
  )
  const r = await fetch(url + '/api/agent/listings', {
    method: 'POST',
    headers: { authorization: 'Basic abc' },
    body: new FormData(),
  })
  t.equal(r.status, 401)
})

t.test('title', async (t) => {
  await accepted(t, 'title of 80', { fields: f({ title: 'T'.repeat(80) }) })
  await accepted(t, 'title of 80 code points (emoji)', { fields: f({ title: '🤖'.repeat(80) }) })
  await refused(t, 'title of 81', 400, /title: at most 80/, { fields: f({ title: 'T'.repeat(81) }) })
  await refused(t, 'title with a line break', 400, /title: must not contain line breaks/, {
    fields: f({ title: 'one\ntwo' }),
  })
  await refused(t, 'title with CR', 400, /title: must not contain line breaks/, {
    fields: f({ title: 'one\rtwo' }),
  })
  await refused(t, 'empty title', 400, /title: must not be empty/, { fields: f({ title: '   ' }) })
  await refused(t, 'missing title', 400, /title: required/, { fields: without('title') })
})

t.test('summary', async (t) => {
  await accepted(t, 'summary of 180', { fields: f({ summary: 's'.repeat(180) }) })
  await refused(t, 'summary of 181', 400, /summary: at most 180/, { fields: f({ summary: 's'.repeat(181) }) })
  await refused(t, 'summary with a line break', 400, /summary: must not contain line breaks/, {
    fields: f({ summary: 'a\nb' }),
  })
  await refused(t, 'missing summary', 400, /summary: required/, { fields: without('summary') })
})

t.test('description', async (t) => {
  await accepted(t, 'description of 20', { fields: f({ description: 'd'.repeat(20) }) })
  await accepted(t, 'description of 8000 with line breaks', {
    fields: f({ description: 'line\n'.repeat(1600) }),
  })
  await refused(t, 'description of 19', 400, /description: 20 to 8000 characters \(got 19\)/, {
    fields: f({ description: 'd'.repeat(19) }),
  })
  await refused(t, 'description of 8001', 400, /description: 20 to 8000 characters \(got 8001\)/, {
    fields: f({ description: 'd'.repeat(8001) }),
  })
  await refused(t, 'missing description', 400, /description: required/, { fields: without('description') })
})

t.test('machineType and license enums', async (t) => {
  for (const m of ['vending', 'arm', 'drone', 'amr', 'sensor', 'humanoid', 'other'])
    await accepted(t, `machineType ${m}`, { fields: f({ machineType: m }) })
  for (const l of ['research', 'commercial', 'audit'])
    await accepted(t, `license ${l}`, { fields: f({ license: l }) })
  await refused(t, 'machineType toaster', 400, /machineType: must be one of/, {
    fields: f({ machineType: 'toaster' }),
  })
  await refused(t, 'machineType in caps', 400, /machineType/, { fields: f({ machineType: 'ARM' }) })
  await refused(t, 'license free', 400, /license: must be one of/, { fields: f({ license: 'free' }) })
})

t.test('price', async (t) => {
  const j = await accepted(t, 'price of 1 wei', { fields: f({ priceNative: '0.000000000000000001' }) })
  t.equal((await market.ctx.db.listings.get(j.slug as string))!.priceWei, '1')
  await accepted(t, 'price of 12.5', { fields: f({ priceNative: '12.5' }) })
  await refused(t, 'price 0', 400, /priceNative: must be greater than zero/, {
    fields: f({ priceNative: '0' }),
  })
  await refused(t, 'price 0.0', 400, /priceNative: must be greater than zero/, {
    fields: f({ priceNative: '0.000000000000000000' }),
  })
  await refused(t, 'negative price', 400, /priceNative: must be a decimal/, {
    fields: f({ priceNative: '-1' }),
  })
  await refused(t, 'exponent', 400, /priceNative: must be a decimal/, { fields: f({ priceNative: '1e3' }) })
  await refused(t, '19 decimals', 400, /priceNative: must be a decimal number with at most 18 decimals/, {
    fields: f({ priceNative: '0.0000000000000000001' }),
  })
  await refused(t, 'not a number', 400, /priceNative/, { fields: f({ priceNative: 'cheap' }) })
  await refused(t, 'missing price', 400, /priceNative: required/, { fields: without('priceNative') })
})

t.test('manifest', async (t) => {
  const ds = dataset(4, dev.agentId)
  const m = (over: Record<string, unknown>) => JSON.stringify({ ...ds.manifest, ...over })
  await refused(t, 'version 2', 400, /manifest version: must be 1/, { manifest: m({ version: 2 }) }, ds)
  await refused(t, 'chainId 1', 400, /manifest chainId: must be 10143/, { manifest: m({ chainId: 1 }) }, ds)
  await refused(
    t,
    'another agent',
    400,
    /agentId: 7 does not match the key's agent 0/,
    { manifest: m({ agentId: '7' }) },
    ds,
  )
  await refused(t, 'not JSON', 400, /manifest: not a valid UTF-8 JSON/, { manifest: '{"version":1,' }, ds)
  await refused(
    t,
    'no rows',
    400,
    /rows: must hold at least one row/,
    { manifest: m({ rows: [] }), data: '' },
    ds,
  )
  const wrongHash = ds.manifest.rows.map((r, i) =>
    i === 2 ? { ...r, paramsHash: lineHash('something else') } : r,
  )
  await refused(
    t,
    'paramsHash of row 2 wrong',
    400,
    /rows\[2\]\.paramsHash: does not equal keccak256 of data line 3/,
    { manifest: m({ rows: wrongHash }) },
    ds,
  )
  const swapped = [ds.lines[1], ds.lines[0], ds.lines[2], ds.lines[3]].join('\n') + '\n'
  await refused(t, 'lines swapped', 400, /rows\[0\]\.paramsHash/, { data: swapped }, ds)
  await refused(
    t,
    'one line more',
    400,
    /4 rows but the data file has 5 lines/,
    { data: ds.data + '{"extra":1}\n' },
    ds,
  )
  await refused(
    t,
    'one line less',
    400,
    /4 rows but the data file has 3 lines/,
    { data: ds.lines.slice(0, 3).join('\n') },
    ds,
  )
  const dup = ds.manifest.rows.map((r, i) =>
    i === 3 ? { ...r, requestHash: ds.manifest.rows[1]!.requestHash } : r,
  )
  await refused(
    t,
    'duplicate requestHash',
    400,
    /rows\[3\]\.requestHash: same as rows\[1\]/,
    { manifest: m({ rows: dup }) },
    ds,
  )
  const badHash = ds.manifest.rows.map((r, i) => (i === 0 ? { ...r, requestHash: '0x1234' } : r))
  await refused(
    t,
    'short requestHash',
    400,
    /rows\[0\]\.requestHash: must be a 0x-prefixed 32-byte hex hash/,
    { manifest: m({ rows: badHash }) },
    ds,
  )
  await refused(t, 'missing manifest', 400, /manifest: required/, { manifest: null }, ds)
  await refused(t, 'missing data', 400, /data: required/, { data: null }, ds)
  await refused(
    t,
    'data not UTF-8',
    400,
    /data: not valid UTF-8/,
    { data: new Uint8Array([0xff, 0xfe, 0x0a]) },
    ds,
  )
  await accepted(t, 'data without a trailing newline', { data: ds.lines.join('\n') }, ds)
})

t.test('rows: 5000 accepted, 5001 refused', async (t) => {
  await accepted(t, '5000 rows', {}, dataset(5000, dev.agentId))
  const ds = dataset(5001, dev.agentId)
  await refused(t, '5001 rows', 400, /rows: at most 5000 items \(got 5001\)/, {}, ds)
})

t.test('file sizes: 20 MB accepted, one byte more refused with 413', async (t) => {
  const exact = exactSize(MiB20, 1000)
  t.equal(Buffer.byteLength(exact.data), MiB20)
  await accepted(t, 'data of exactly 20 MB', {}, exact)
  const over = exactSize(MiB20 + 1, 1000)
  t.equal(Buffer.byteLength(over.data), MiB20 + 1)
  await refused(t, 'data of 20 MB + 1 byte', 413, /data: larger than 20 MB \(20,971,520 bytes\)/, {}, over)
  const big = Buffer.alloc(MiB20 + 1, 0x20)
  await refused(t, 'manifest of 20 MB + 1 byte', 413, /manifest: larger than 20 MB/, { manifest: big })
})

t.test('image: JPEG, PNG and WebP by content; anything else refused', async (t) => {
  const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3, 4])
  const jpeg = new Uint8Array([0xff, 0xd8, 0xff, 0xe0, 0, 0x10, 0x4a, 0x46, 0x49, 0x46])
  const webp = new Uint8Array([...Buffer.from('RIFF'), 0x24, 0, 0, 0, ...Buffer.from('WEBPVP8 ')])
  const j = await accepted(t, 'png', { image: png })
  await accepted(t, 'jpeg', { image: jpeg })
  await accepted(t, 'webp', { image: webp })
  const img = await fetch(url + `/api/marketplace/listings/${j.slug}/image`)
  t.equal(img.status, 200)
  t.equal(img.headers.get('content-type'), 'image/png')
  t.same(new Uint8Array(await img.arrayBuffer()), png, 'the image comes back byte for byte')
  await refused(t, 'gif', 400, /image: not a JPEG, PNG or WebP/, {
    image: new Uint8Array([...Buffer.from('GIF89a'), 1, 0, 1, 0]),
  })
  await refused(t, 'text named .png', 400, /image: not a JPEG, PNG or WebP/, {
    image: new Uint8Array(Buffer.from('<svg></svg>')),
  })
  await refused(t, 'image over 5 MB', 413, /image: larger than 5 MB/, {
    image: new Uint8Array(5 * 1024 * 1024 + 1).fill(0xff),
  })
  const noImg = await accepted(t, 'no image', {})
  t.equal((await api(url, `/api/marketplace/listings/${noImg.slug}/image`)).status, 404)
})

t.test('multipart shape', async (t) => {
  await refused(t, 'unknown field', 400, /color: not a listing field/, { extra: [['color', 'red']] })
  await refused(t, 'title twice', 400, /title: given more than once/, { extra: [['title', 'again']] })
  const r = await fetch(url + '/api/agent/listings', {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: '{}',
  })
  t.equal(r.status, 400)
  t.match(((await r.json()) as { error: string }).error, /multipart/)
})

t.test('listing reads: filters, search, paging', async (t) => {
  const a = await accepted(t, 'drone listing', {
    fields: f({
      title: 'Drone survey flights Zebra',
      machineType: 'drone',
      license: 'commercial',
      priceNative: '2',
    }),
  })
  await accepted(t, 'arm listing', {
    fields: f({ title: 'Arm picks Zebra', machineType: 'arm', license: 'audit', priceNative: '0.5' }),
  })
  const byType = await api(url, '/api/marketplace/listings?machineType=drone')
  t.equal(byType.status, 200)
  t.ok((byType.json.listings as { machineType: string }[]).every((l) => l.machineType === 'drone'))
  t.ok((byType.json.listings as { slug: string }[]).some((l) => l.slug === a.slug))
  const search = await api(url, '/api/marketplace/listings?q=zebra')
  t.equal(search.json.total, 2, 'search by title, case-insensitive')
  const lic = await api(url, '/api/marketplace/listings?q=zebra&license=audit')
  t.equal(lic.json.total, 1)
  const price = await api(url, '/api/marketplace/listings?q=zebra&minPrice=1&maxPrice=2')
  t.same(
    (price.json.listings as { slug: string }[]).map((l) => l.slug),
    [a.slug],
  )
  const page = await api(url, '/api/marketplace/listings?limit=1&offset=1')
  t.equal((page.json.listings as unknown[]).length, 1)
  const samples = await api(url, '/api/marketplace/listings?q=sample')
  t.ok(
    (samples.json.listings as { sample: boolean }[]).every((l) => l.sample),
    'sample listings are marked',
  )
  t.equal((await api(url, '/api/marketplace/listings?machineType=toaster')).status, 400)
  t.equal((await api(url, '/api/marketplace/listings?minPrice=-1')).status, 400)
  t.equal((await api(url, '/api/marketplace/listings?limit=0')).status, 400)
  t.equal((await api(url, '/api/marketplace/listings?limit=101')).status, 400)
})

t.test('listing reads: sort and cursor paging', async (t) => {
  for (const [title, price] of [
    ['Okapi sort one', '0.3'],
    ['Okapi sort two', '0.1'],
    ['Okapi sort three', '0.2'],
  ] as const)
    await accepted(t, title, { fields: f({ title, priceNative: price }) })
  const cheap = await api(url, '/api/marketplace/listings?q=okapi&sort=price')
  t.same(
    (cheap.json.listings as { priceNative: string }[]).map((l) => l.priceNative),
    ['0.1', '0.2', '0.3'],
    'sort=price: cheapest first',
  )
  const newest = await api(url, '/api/marketplace/listings?q=okapi')
  t.same(
    (newest.json.listings as { title: string }[]).map((l) => l.title),
    ['Okapi sort three', 'Okapi sort two', 'Okapi sort one'],
    'newest first by default',
  )
  // Page by cursor: one at a time, forward then back.
  const p1 = await api(url, '/api/marketplace/listings?q=okapi&sort=price&limit=1')
  t.equal(p1.json.prev, null)
  const p2 = await api(url, `/api/marketplace/listings?q=okapi&sort=price&limit=1&cursor=${p1.json.next}`)
  const p3 = await api(url, `/api/marketplace/listings?q=okapi&sort=price&limit=1&cursor=${p2.json.next}`)
  t.same(
    [p1, p2, p3].map((p) => (p.json.listings as { priceNative: string }[])[0]!.priceNative),
    ['0.1', '0.2', '0.3'],
  )
  t.equal(p3.json.next, null, 'the last page has no next')
  t.equal(p3.json.total, 3)
  const back = await api(url, `/api/marketplace/listings?q=okapi&sort=price&limit=1&before=${p3.json.prev}`)
  t.same((back.json.listings as { priceNative: string }[])[0]!.priceNative, '0.2', 'before: the page before')
  const bad = async (query: string, re: RegExp) => {
    const r = await api(url, `/api/marketplace/listings?${query}`)
    t.equal(r.status, 400, query)
    t.match(r.json.error, re, query)
  }
  await bad('sort=cheapest', /^sort: must be one of newest, price, rows/)
  await bad('cursor=%21%21', /^cursor: not a cursor from this list/)
  await bad(`sort=rows&cursor=${p1.json.next}`, /^cursor: made for sort=price, not sort=rows/)
  await bad(`cursor=${p1.json.next}&before=${p1.json.next}&sort=price`, /^cursor: give cursor .* or before/)
})

t.test('OpenAPI document lists every route', async (t) => {
  const r = await api(url, '/api/openapi.json')
  t.equal(r.status, 200)
  const paths = Object.keys(r.json.paths as object)
  for (const p of [
    '/api/auth/nonce',
    '/api/auth/verify',
    '/api/auth/session',
    '/api/auth/signout',
    '/api/marketplace/challenges',
    '/api/marketplace/keys',
    '/api/agent/listings',
    '/api/marketplace/listings',
    '/api/marketplace/listings/{slug}',
    '/api/marketplace/listings/{slug}/verify',
    '/api/marketplace/listings/{slug}/purchase',
    '/api/marketplace/listings/{slug}/file',
    '/api/marketplace/listings/{slug}/image',
  ])
    t.ok(paths.includes(p), `documents ${p}`)
})

t.test('unknown routes answer JSON 404', async (t) => {
  const r = await api(url, '/api/nope')
  t.equal(r.status, 404)
  t.match(r.json.error, /no route GET \/api\/nope/)
})

t.test('Idempotency-Key: a retried post answers the first 201 body and lists nothing new', async (t) => {
  const ds = dataset(2, dev.agentId)
  const send = async (idem: string) => {
    const form = new FormData()
    for (const [k, v] of Object.entries(goodFields)) form.append(k, v)
    form.append('manifest', new Blob([JSON.stringify(ds.manifest)]), 'manifest.json')
    form.append('data', new Blob([ds.data]), 'operations.jsonl')
    const r = await fetch(url + '/api/agent/listings', {
      method: 'POST',
      body: form,
      headers: { authorization: `Bearer ${key}`, 'idempotency-key': idem },
    })
    return { status: r.status, json: (await r.json()) as Record<string, unknown> }
  }
  const first = await send('local-listing-1')
  t.equal(first.status, 201)
  const before = await listingCount()
  const again = await send('local-listing-1')
  t.equal(again.status, 201)
  t.same(again.json, first.json, 'same answer')
  t.equal(await listingCount(), before, 'nothing new listed')
  const other = await send('local-listing-2')
  t.not(other.json.slug, first.json.slug, 'another key lists anew')
  const bad = await send('bad key with spaces')
  t.equal(bad.status, 400)
  t.match(bad.json.error, /Idempotency-Key/)
})
