// The website's newer pages and routes without a browser: the data preview of a real upload
// (fields, samples, hostile lines escaped and bounded on every page), the preview field's 400,
// key revocation (owner only; a revoked key cannot list), the receipts route, licence pages,
// the API reference (from the OpenAPI document, nothing from another origin), the local-chain
// guide, favicon and the head's description and Open Graph tags.
import t from 'tap'
import { startDevChain } from '../../chain/dev.ts'
import { anvilAccount } from '../../chain/accounts.ts'
import { canonicalLine } from '../../records/index.ts'
import { page as shell } from '../../market/pages/layout.ts'
import { html } from '../../web/html.ts'
import { purchasesMain } from '../../market/pages/purchases.ts'
import { api, dataset, datasetFrom, issueKey, postListing, signIn } from '../market/market-helpers.ts'
import { startWebMarket } from './web-helpers.ts'

const dev = await startDevChain()
t.teardown(() => dev.stop())
const { url } = await startWebMarket(t, dev)
const owner = dev.accounts.owner.privateKey
const cookie = await signIn(url, owner)
const key = (await issueKey(url, cookie, owner, dev.agentId)).json.key as string

/** Every tag that loads or links something from an origin other than this market's. */
const foreign = (html: string): string[] =>
  [...html.matchAll(/\b(?:src|href|action)="([^"]*)"/g)]
    .map((m) => m[1]!)
    .filter((u) => /^(?:[a-z]+:)?\/\//i.test(u) && !u.startsWith(url))

t.test(
  'the listing page shows the preview of the uploaded lines; samples come with their hashes',
  async (t) => {
    const lines = [0, 1, 2, 3].map((i) =>
      canonicalLine({
        action: i === 3 ? 'refill' : 'vend',
        at: `2026-03-0${i + 1}T10:00:00.000Z`,
        params: { slot: `A${i}`, cents: 100 + i * 25 },
        request_uri: `svc://vend1/${i}`,
      }),
    )
    const ds = datasetFrom(lines, dev.agentId)
    const l = await postListing(url, key, ds, { extra: [['preview', '2']] })
    t.equal(l.status, 201, JSON.stringify(l.json))
    const page = await api(url, `/marketplace/${l.json.slug as string}`)
    t.match(page.text, '<h2 id="preview-h">Preview</h2>')
    t.match(page.text, '4 lines · 5 fields')
    for (const f of ['action', 'at', 'params.cents', 'params.slot', 'request_uri'])
      t.match(page.text, `<td><code>${f}</code></td>`, `field ${f} listed`)
    t.match(
      page.text,
      /<td><code>params.cents<\/code><\/td><td>number<\/td><td class="n">4<\/td><td class="n">100<\/td><td class="n">175<\/td>/,
    )
    t.match(
      page.text,
      '<code>at</code> from <time datetime="2026-03-01T10:00:00.000Z">2026-03-01 10:00</time>',
    )
    t.match(page.text, /<th scope="row"><code>vend<\/code><\/th>[\s\S]*?<td class="n">3<\/td>/, 'histogram')
    t.equal(page.text.match(/class="sample-line"/g)?.length, 2, 'the two published lines')
    t.match(page.text, `title="${ds.manifest.rows[1]!.paramsHash}"`, 'each with its paramsHash')
    t.match(page.text, `title="${ds.requestHashes[1]}"`, 'and its requestHash')
    t.match(page.text, 'id="sample-verdict-1">Not checked yet: press Verify.')
    const api1 = await api(url, `/api/marketplace/listings/${l.json.slug as string}`)
    t.same(api1.json.preview, {
      fields: 5,
      from: '2026-03-01T10:00:00.000Z',
      to: '2026-03-04T10:00:00.000Z',
      samples: 2,
    })
    const browse = await api(url, '/marketplace')
    t.match(
      browse.text,
      '4 rows · 5 fields · <time datetime="2026-03-01T10:00:00.000Z">2026-03-01 → 2026-03-04</time>',
    )
  },
)

t.test('a bad preview field is a 400 naming it, and nothing is listed', async (t) => {
  const before = (await api(url, '/api/marketplace/listings?limit=100')).json.total
  const r = await postListing(url, key, dataset(2, dev.agentId), { extra: [['preview', '9']] })
  t.equal(r.status, 400)
  t.match(r.json.error, 'preview: must be a whole number of sample lines from 0 to 5 (got "9")')
  t.equal((await api(url, '/api/marketplace/listings?limit=100')).json.total, before)
})

t.test(
  'hostile lines (markup in names and values, 10 KB strings, deep nesting) are escaped and bounded on every page',
  async (t) => {
    let deep: Record<string, unknown> = { leaf: '<i>deep</i>' }
    for (let i = 0; i < 200; i++) deep = { n: deep }
    const big = `<b>${'y'.repeat(10_000)}</b>`
    const lines = [
      canonicalLine({
        '<img src=x onerror=alert(1)>': '<script>alert(1)</script>',
        action: '<svg onload=alert(2)>',
        at: '2026-01-01T00:00:00Z',
      }),
      canonicalLine({ [big]: big, action: big }),
      canonicalLine({ deep, action: 'ok' }),
    ]
    const l = await postListing(url, key, datasetFrom(lines, dev.agentId), {
      fields: {
        title: 'Hostile preview',
        summary: 'Lines written to break pages',
        description: 'Lines with markup, long strings and deep nesting.',
        machineType: 'other',
        license: 'audit',
        priceNative: '0.01',
      },
      extra: [['preview', '3']],
    })
    t.equal(l.status, 201, JSON.stringify(l.json))
    const slug = l.json.slug as string
    for (const path of [
      `/marketplace/${slug}`,
      '/marketplace',
      `/agents/${dev.agentId}`,
      `/api/marketplace/listings/${slug}`,
    ]) {
      const r = await api(url, path)
      t.equal(r.status, 200, path)
      t.notMatch(r.text, '<img src=x', `${path}: no raw img`)
      t.notMatch(r.text, '<script>alert', `${path}: no raw script`)
      t.notMatch(r.text, '<svg onload', `${path}: no raw svg`)
      t.notMatch(r.text, '<i>deep', `${path}: no raw markup from the nesting`)
      t.ok(r.text.length < 150_000, `${path}: bounded (${r.text.length} characters)`)
    }
    const page = (await api(url, `/marketplace/${slug}`)).text
    t.match(
      page,
      '<td><code>&lt;img src=x onerror=alert(1)&gt;</code></td>',
      'a field name with markup is text',
    )
    t.match(page, '<code>&lt;svg onload=alert(2)&gt;</code>', 'an action with markup is text')
    t.notMatch(page, 'y'.repeat(2100), 'a 10 KB value is cut')
    t.match(page, 'Cut for display: the line is', 'and says so')
    t.match(page, '<code>deep.n.n</code>', 'nesting stops at three levels')
    t.notMatch(page, 'deep.n.n.n', 'and goes no deeper')
  },
)

t.test('descriptions are Markdown with raw HTML and images off', async (t) => {
  const l = await postListing(url, key, dataset(1, dev.agentId), {
    fields: {
      title: 'Markdown description',
      summary: 'Shows a rendered description',
      description:
        'Use `jq` on **every** line.\n\n- one\n- two\n\n<script>alert(1)</script>\n\n![x](https://evil.example/x.png) [docs](https://example.org/d) [bad](javascript:alert(1))',
      machineType: 'vending',
      license: 'research',
      priceNative: '0.01',
    },
  })
  const page = (await api(url, `/marketplace/${l.json.slug as string}`)).text
  t.match(page, 'Use <code>jq</code> on <strong>every</strong> line.')
  t.match(page, '<li>one</li>')
  t.match(page, '&lt;script&gt;alert(1)&lt;/script&gt;', 'raw HTML is text')
  t.notMatch(page, '<img src="https://evil', 'no image from another origin')
  t.notMatch(page, 'href="javascript:', 'no javascript: link')
  t.match(page, '<a href="https://example.org/d">docs</a>', 'an https link is kept')
})

t.test('revoking a key: owner only, once; a revoked key can no longer list', async (t) => {
  const k = await issueKey(url, cookie, owner, dev.agentId)
  t.equal(k.status, 201)
  const id = k.json.id as string
  const stranger = await signIn(url, anvilAccount(7).privateKey)
  const other = await api(url, `/api/marketplace/keys/${id}`, { method: 'DELETE', cookie: stranger })
  t.equal(other.status, 403, 'another account may not')
  t.match(other.json.error, 'only the account that asked for it or its wallet may revoke it')
  t.equal(
    (await api(url, `/api/marketplace/keys/${id}`, { method: 'DELETE' })).status,
    401,
    'signed out may not',
  )
  t.equal((await api(url, '/api/marketplace/keys/nope', { method: 'DELETE', cookie })).status, 404)
  t.equal(
    (
      await api(url, `/api/marketplace/keys/${id}`, {
        method: 'DELETE',
        cookie,
        headers: { origin: 'https://evil.example' },
      })
    ).status,
    403,
    'a cross-site revoke is refused',
  )
  t.equal((await postListing(url, k.json.key as string, dataset(1, dev.agentId))).status, 201, 'lists before')
  const r = await api(url, `/api/marketplace/keys/${id}`, { method: 'DELETE', cookie })
  t.equal(r.status, 200)
  t.match(r.json.key, { id, status: 'revoked', revokedReason: 'revoked by its owner' })
  const again = await api(url, `/api/marketplace/keys/${id}`, { method: 'DELETE', cookie })
  t.equal(again.status, 409)
  const after = await postListing(url, k.json.key as string, dataset(1, dev.agentId))
  t.equal(after.status, 403, 'the revoked key cannot list')
  t.match(after.json.error, 'was revoked: revoked by its owner')
  const page = (await api(url, '/keys', { cookie })).text
  t.match(page, 'revoked: revoked by its owner')
  t.match(
    page,
    /<button type="button" class="revoke secondary" data-id="[A-Za-z0-9_-]+"/,
    'an active key has a Revoke button',
  )
  t.notMatch(page, `data-id="${id}"`, 'a revoked one has none')
})

t.test('purchases: the route needs a session; the page asks to sign in or lists nothing yet', async (t) => {
  t.equal((await api(url, '/api/marketplace/purchases')).status, 401)
  t.same((await api(url, '/api/marketplace/purchases', { cookie })).json, { purchases: [] })
  t.match((await api(url, '/purchases')).text, 'Sign in with the wallet you bought with')
  t.match((await api(url, '/purchases', { cookie })).text, 'You have not bought a dataset with')
})

t.test('licence pages, the API reference, the local-chain guide, favicon and head tags', async (t) => {
  for (const kind of ['research', 'commercial', 'audit']) {
    const r = await api(url, `/licenses/${kind}`)
    t.equal(r.status, 200, kind)
    t.match(r.text, '<h2>You may not</h2>')
  }
  t.equal((await api(url, '/licenses/<x>')).status, 404)
  t.match((await api(url, '/licenses')).text, 'href="/licenses/audit"')
  const docs = await api(url, '/api/docs')
  t.equal(docs.status, 200)
  for (const route of ['/api/agent/listings', '/api/marketplace/keys/{id}', '/api/marketplace/purchases'])
    t.match(docs.text, `<code>${route}</code>`, route)
  t.match(docs.text, '<span class="method m-delete">DELETE</span>')
  t.same(foreign(docs.text), [], 'the API reference loads and links nothing from another origin')
  const guide = await api(url, '/guide/local-chain')
  t.equal(guide.status, 200)
  t.match(guide.text, `<code>${dev.rpcUrl}</code>`)
  t.match(guide.text, '<code>10143</code>')
  t.match(guide.text, `<code>${dev.accounts.buyer.address}</code>`)
  const browse = await api(url, '/marketplace')
  t.match(browse.text, '<a href="/guide/local-chain">Buy on the local chain</a>', 'linked from the footer')
  t.match(browse.text, '<link rel="icon" href="/assets/favicon.svg" type="image/svg+xml">')
  t.match(browse.text, /<meta name="description" content="[^"]+">/)
  t.match(browse.text, '<meta property="og:title" content="Datasets">')
  t.same(foreign(browse.text), [], 'no asset from another origin')
  const fav = await fetch(`${url}/favicon.ico`, { redirect: 'manual' })
  t.equal(fav.status, 301)
  t.equal(fav.headers.get('location'), '/assets/favicon.svg')
  const svg = await fetch(`${url}/assets/favicon.svg`)
  t.equal(svg.headers.get('content-type'), 'image/svg+xml')
})

t.test(
  'receipts link the explorer only when explorerUrl is set; no guide link off the dev chain',
  async (t) => {
    const r = {
      slug: 's',
      title: 'T <b>',
      url: '/marketplace/s',
      txHash: `0x${'ab'.repeat(32)}`,
      block: '42',
      paidNative: '0.05',
      priceNative: '0.05',
      at: '2026-01-01T00:00:00.000Z',
    }
    const withExplorer = purchasesMain('0xAbC', [r], 'MON', 'https://explorer.example').value
    t.match(withExplorer, `<a href="https://explorer.example/tx/${r.txHash}" rel="noopener"`)
    t.match(withExplorer, '<td data-label="Block">42</td>')
    t.match(withExplorer, 'T &lt;b&gt;')
    const without = purchasesMain('0xAbC', [r], 'MON', null).value
    t.notMatch(without, 'explorer.example')
    t.match(without, `<code title="${r.txHash}">`)
    const base = {
      title: 'x',
      displayName: 'svc',
      chainId: 10143,
      account: null,
      nav: 'none' as const,
      main: html``,
    }
    t.notMatch(shell(base).value, '/guide/local-chain')
    t.match(shell({ ...base, devChain: true }).value, '/guide/local-chain')
  },
)

t.test('a verdict over a day old is marked stale on the badge and in the sentence', async (t) => {
  const { verificationBadge, verificationLine, STALE_MS } = await import('../../market/pages/verification.ts')
  const v = { state: 'verified' as const, block: '7', checkedAt: '2026-01-01T00:00:00.000Z', reason: null }
  const at = Date.parse(v.checkedAt)
  t.notMatch(verificationBadge(v, at + STALE_MS - 1).value, 'stale')
  t.match(verificationBadge(v, at + STALE_MS + 1).value, 'class="tag v-verified v-stale"')
  t.match(verificationBadge(v, at + STALE_MS + 1).value, 'verified (stale)')
  t.match(verificationLine(v, at + STALE_MS + 1).value, 'This verdict is over a day old')
  t.notMatch(verificationBadge(v).value, 'stale', 'without a clock nothing is judged stale')
})
