// The website's server side without a browser: markup escapes what devices send, filters and
// errors render, unknown listings are 404 pages, security headers and assets are served.
import t from 'tap'
import { privateKeyToAccount } from 'viem/accounts'
import { startDevChain } from '../../chain/dev.ts'
import { browseMain, browseQuery } from '../../market/pages/browse.ts'
import { dailyRows, opsChart } from '../../market/pages/chart.ts'
import { escapeHtml, html, trusted } from '../../web/html.ts'
import { api, dataset, issueKey, postListing, signIn } from '../market/market-helpers.ts'
import { startWebMarket } from './web-helpers.ts'

t.test('html escapes every interpolated string, not nested Html', async (t) => {
  t.equal(
    escapeHtml(`<a href="x" onclick='y'>&</a>`),
    '&lt;a href=&quot;x&quot; onclick=&#39;y&#39;&gt;&amp;&lt;/a&gt;',
  )
  const inner = html`<b>${'<i>'}</b>`
  t.equal(
    html`<p title="${'"x"'}">${inner}${['<', trusted('<br>')]}${null}${undefined}${false}${0}</p>`.value,
    '<p title="&quot;x&quot;"><b>&lt;i&gt;</b>&lt;<br>0</p>',
  )
})

t.test('dailyRows counts rows per UTC day inside the window; opsChart labels the totals', async (t) => {
  const day = 86_400_000
  const now = Date.UTC(2026, 10, 21, 12)
  const d = dailyRows(
    [
      { createdAt: Date.UTC(2026, 10, 21, 0, 0, 1), rows: 5 },
      { createdAt: Date.UTC(2026, 10, 21, 23, 59), rows: 2 },
      { createdAt: Date.UTC(2026, 10, 19, 3), rows: 4 },
      { createdAt: now - 3 * day, rows: 1 },
      { createdAt: now - 30 * day, rows: 100 },
      { createdAt: now + day, rows: 100 },
    ],
    now,
    3,
  )
  t.same(d, [
    { day: '2026-11-19', rows: 4 },
    { day: '2026-11-20', rows: 0 },
    { day: '2026-11-21', rows: 7 },
  ])
  const svg = opsChart(d, 'Rows <per> day').value
  t.match(
    svg,
    'aria-label="Rows &lt;per&gt; day: 11 rows from 2026-11-19 to 2026-11-21, at most 7 in one day"',
  )
  t.equal(svg.match(/<rect /g)?.length, 3, 'one bar a day')
  t.match(svg, '<tr><td>2026-11-21</td><td>7</td></tr>')
  t.notMatch(svg, '<tr><td>2026-11-20</td>', 'empty days are left out of the table')
})

t.test('browse query: strings only, trimmed and capped; paging links keep the filters', async (t) => {
  t.same(browseQuery({ q: ['a', 'b'], machineType: ' arm ', offset: '24', extra: 'x' }), {
    q: '',
    machineType: 'arm',
    license: '',
    minPrice: '',
    maxPrice: '',
    sort: '',
    cursor: '',
    before: '',
    offset: 24,
  })
  t.equal(browseQuery({ q: 'x'.repeat(500) }).q.length, 200)
  t.equal(browseQuery({ offset: '-5' }).offset, 0)
  t.equal(browseQuery({ offset: '2.5' }).offset, 0)
  t.equal(browseQuery({ offset: '1e30' }).offset, 1_000_000, 'a huge offset is clamped')
  const listing = {
    slug: 's',
    url: '/marketplace/s',
    title: 'T',
    summary: 'S',
    description: 'D',
    machineType: 'arm',
    license: 'research',
    priceNative: '1',
    priceWei: '1',
    payout: '0x',
    agentId: '0',
    rows: 1,
    dataBytes: 1,
    imageUrl: null,
    status: 'listed',
    sample: false,
    createdAt: '2026-01-01T00:00:00.000Z',
    verification: { state: 'unchecked', block: null, checkedAt: null, reason: null },
  }
  const mid = browseMain(
    browseQuery({ q: 'a b', offset: '24' }),
    { ok: true, total: 60, listings: Array(24).fill(listing) },
    'MON',
  ).value
  t.match(mid, 'Showing 25–48 of 60 listings.')
  t.match(mid, '<a href="/marketplace?q=a+b" rel="prev">Previous</a>')
  t.match(mid, '<a href="/marketplace?q=a+b&amp;offset=48" rel="next">Next</a>')
  const last = browseMain(
    browseQuery({ offset: '48' }),
    { ok: true, total: 60, listings: Array(12).fill(listing) },
    'MON',
  ).value
  t.match(last, 'Showing 49–60 of 60 listings.')
  t.notMatch(last, 'rel="next"')
  const past = browseMain(browseQuery({ offset: '600' }), { ok: true, total: 60, listings: [] }, 'MON').value
  t.match(past, 'No listings on this page: 60 match. <a href="/marketplace">First page</a>')
})

const dev = await startDevChain()
t.teardown(() => dev.stop())
const { url } = await startWebMarket(t, dev)
const owner = dev.accounts.owner.privateKey
const cookie = await signIn(url, owner)
const key = (await issueKey(url, cookie, owner, dev.agentId)).json.key as string

const HOSTILE = `<script>alert("x")</script> & 'quotes'`

t.test('a listing from a device is escaped everywhere it appears', async (t) => {
  const ds = dataset(3, dev.agentId)
  const l = await postListing(url, key, ds, {
    fields: {
      title: `Vends ${HOSTILE}`.slice(0, 80),
      summary: `Summary ${HOSTILE}`,
      description: `Description with markup ${HOSTILE}\n<img src=x onerror=alert(1)>`,
      machineType: 'vending',
      license: 'commercial',
      priceNative: '0.25',
    },
  })
  t.equal(l.status, 201, JSON.stringify(l.json))
  const slug = l.json.slug as string
  for (const path of [
    `/marketplace/${slug}`,
    '/marketplace',
    `/marketplace?q=${encodeURIComponent('vends')}`,
  ]) {
    const r = await api(url, path)
    t.equal(r.status, 200, path)
    t.notMatch(r.text, /<script>alert/, `${path}: no raw script tag`)
    t.notMatch(r.text, /<img src=x/, `${path}: no raw img tag`)
    t.match(
      r.text,
      '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;quotes&#39;',
      `${path}: the title is shown, escaped`,
    )
  }
  const page = await api(url, `/marketplace/${slug}`)
  t.match(page.text, 'Description with markup', 'description shown')
  t.match(page.text, '0.25 MON', 'price shown')
  t.match(page.text, /<dt>Rows<\/dt><dd id="row-count">3<\/dd>/, 'row count shown')
  t.match(
    page.text,
    /<dt>Machine type<\/dt><dd><a href="\/marketplace\?machineType=vending">vending<\/a><\/dd>/,
  )
  t.match(page.text, /<dt>Licence<\/dt><dd><a href="\/licenses\/commercial">Commercial licence<\/a>/)
  t.match(page.text, 'id="verify-button"', 'verify button')
  t.match(page.text, 'id="buy-button"', 'buy button for a visitor')
  t.match(
    page.headers.get('content-security-policy') ?? '',
    "script-src 'self'",
    'scripts only from the market itself',
  )
  t.equal(page.headers.get('x-content-type-options'), 'nosniff')
  // The owner signed in sees the files, not a Buy button.
  const mine = await api(url, `/marketplace/${slug}`, { cookie })
  t.match(mine.text, 'You listed this dataset.')
  t.match(mine.text, `/api/marketplace/listings/${slug}/file?part=data`)
  t.notMatch(mine.text, 'id="buy-button"')
})

t.test(
  'browse: filters and search narrow the list; a bad filter is a 400 page that says which',
  async (t) => {
    const all = await api(url, '/marketplace')
    t.match(all.text, 'Sample: vending machine sales')
    t.match(all.text, 'Sample: robot arm pick and place')
    const arm = await api(url, '/marketplace?machineType=arm&license=&q=&minPrice=&maxPrice=')
    t.equal(arm.status, 200)
    t.match(arm.text, 'Sample: robot arm pick and place')
    t.notMatch(arm.text, 'Sample: vending machine sales')
    t.match(arm.text, '<option value="arm" selected>arm</option>', 'the chosen filter stays selected')
    const q = await api(url, '/marketplace?q=vending')
    t.match(q.text, 'Sample: vending machine sales')
    t.notMatch(q.text, 'Sample: robot arm')
    const none = await api(url, '/marketplace?minPrice=1000')
    t.match(none.text, 'No listings match.')
    const bad = await api(url, '/marketplace?minPrice=cheap')
    t.equal(bad.status, 400)
    t.match(bad.text, 'Cannot filter: minPrice: must be a decimal price')
    t.match(bad.text, 'value="cheap"', 'the bad value is shown back, escaped, for correction')
    const badType = await api(url, `/marketplace?machineType=${encodeURIComponent('<b>')}`)
    t.equal(badType.status, 400)
    t.match(badType.text, 'machineType: must be one of')
    t.notMatch(badType.text, 'value="<b>"')
  },
)

t.test('agent page: operations over time and the agent listings, samples left out', async (t) => {
  const r = await api(url, `/agents/${dev.agentId}`)
  t.equal(r.status, 200)
  t.match(r.text, 'Operations over time')
  t.match(
    r.text,
    /aria-label="Operation rows listed per day by agent 0, last 30 days: 3 rows from/,
    'the chart counts the listed rows',
  )
  t.match(r.text, 'Vends &lt;script&gt;', 'the listing is shown, escaped')
  t.notMatch(r.text, 'Sample:', 'sample listings are not the agent operations')
  // An agent the chain does not know and nothing was listed from: 404, not an empty chart.
  const none = await api(url, '/agents/999')
  t.equal(none.status, 404, 'an unknown agent is a 404')
  t.match(none.text, 'There is no agent 999 on chain 10143, and no listing from it.')
  const bad = await api(url, `/agents/${encodeURIComponent('<x>')}`)
  t.equal(bad.status, 404)
  t.match(bad.text, '&quot;&lt;x&gt;&quot; is not an agent id')
})

t.test('unknown or malformed listing slugs are 404 pages', async (t) => {
  const r = await api(url, '/marketplace/no-such-listing')
  t.equal(r.status, 404)
  t.match(r.text, 'There is no listing &quot;no-such-listing&quot;.')
  const odd = await api(url, `/marketplace/${encodeURIComponent('<x>"Y')}`)
  t.equal(odd.status, 404)
  t.notMatch(odd.text, '<x>')
  t.match(odd.text, '&lt;x&gt;&quot;Y')
})

t.test('keys page: asks a visitor to sign in; lists a signed-in owner keys without secrets', async (t) => {
  const anon = await api(url, '/keys')
  t.equal(anon.status, 200)
  t.match(anon.text, 'Sign in with the wallet that owns')
  t.notMatch(anon.text, 'id="issue-form"')
  const mine = await api(url, '/keys', { cookie })
  t.match(mine.text, 'id="issue-form"')
  t.match(mine.text, `<code>svc_${key.slice(4, 12)}…</code>`, 'the key prefix is listed')
  t.notMatch(mine.text, key, 'the key itself is never shown again')
})

t.test(
  'the sign-in message is built by the server: EIP-55 address, this host, the chain; bad input is a 400 that names the field',
  async (t) => {
    const lower = dev.accounts.buyer.address.toLowerCase()
    const r = await api(url, `/auth/siwe-message?address=${lower}&nonce=abcdef1234567890`)
    t.equal(r.status, 200)
    const m = r.json.message as string
    const host = new URL(url).host
    t.match(
      m,
      new RegExp(
        `^${host} wants you to sign in with your Ethereum account:\n${dev.accounts.buyer.address}\n\nSign in to the svc marketplace\n`,
      ),
    )
    t.match(m, /\nChain ID: 10143\nNonce: abcdef1234567890\nIssued At: /)
    t.match(m, `URI: ${url}`)
    // And a real sign-in with it works (the nonce from the API, the message from the page route).
    const n = await api(url, '/api/auth/nonce')
    const msg = (await api(url, `/auth/siwe-message?address=${lower}&nonce=${n.json.nonce as string}`)).json
      .message as string
    const signature = await privateKeyToAccount(dev.accounts.buyer.privateKey).signMessage({ message: msg })
    const v = await api(url, '/api/auth/verify', { body: { message: msg, signature } })
    t.equal(v.status, 200, JSON.stringify(v.json))
    t.equal(v.json.address, dev.accounts.buyer.address)
    for (const [q, want] of [
      ['nonce=abcdef1234567890', 'address: required'],
      ['address=0x1234&nonce=abcdef1234567890', 'address: required, a 0x address'],
      [`address=${lower}`, 'nonce: required'],
      [`address=${lower}&nonce=short`, 'nonce: required'],
      [
        `address=${lower}&nonce=${encodeURIComponent('abcdefgh\nURI: https://evil.example')}`,
        'nonce: required',
      ],
    ] as const) {
      const b = await api(url, `/auth/siwe-message?${q}`)
      t.equal(b.status, 400, q)
      t.match(b.json.error, want, q)
    }
  },
)

t.test(
  'the unlock message is the purchase route own four lines; bad input is a 400 or 404 that names the field',
  async (t) => {
    const tx = '0x' + 'AB'.repeat(32)
    const r = await api(url, `/auth/unlock-message?slug=sample-arm-picks&tx=${tx}`)
    t.equal(r.status, 200)
    t.equal(r.json.message, `svc marketplace\nUnlock\nlisting: sample-arm-picks\ntx: ${tx.toLowerCase()}`)
    for (const [q, status, want] of [
      [`tx=${tx}`, 400, 'slug: required'],
      [`slug=${encodeURIComponent('<x>')}&tx=${tx}`, 400, 'slug: required'],
      ['slug=sample-arm-picks', 400, 'tx: required'],
      ['slug=sample-arm-picks&tx=0x12', 400, 'tx: required'],
      [`slug=no-such-listing&tx=${tx}`, 404, 'listing no-such-listing not found'],
    ] as const) {
      const b = await api(url, `/auth/unlock-message?${q}`)
      t.equal(b.status, status, q)
      t.match(b.json.error, want, q)
    }
  },
)

t.test('root redirects to the market; assets are served, unknown assets are 404', async (t) => {
  const root = await fetch(url + '/', { redirect: 'manual' })
  t.equal(root.status, 302)
  t.equal(root.headers.get('location'), '/marketplace')
  for (const [name, type] of [
    ['site.css', 'text/css'],
    ['wallet.js', 'text/javascript'],
    ['listing.js', 'text/javascript'],
    ['keys.js', 'text/javascript'],
    ['session.js', 'text/javascript'],
  ] as const) {
    const a = await fetch(`${url}/assets/${name}`)
    t.equal(a.status, 200, name)
    t.match(a.headers.get('content-type') ?? '', type, name)
  }
  const missing = await fetch(`${url}/assets/..%2Fhtml.ts`)
  t.equal(missing.status, 404)
})
