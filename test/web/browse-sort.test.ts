// The browse page's sort control and its cursor pages: the chosen order stays selected, Next and
// Previous carry the API's cursors (and the filters and sort), and the pages between them hold
// each listing once. The agent page pages the same way.
import t from 'tap'
import { startDevChain } from '../../chain/dev.ts'
import type { ListingRecord } from '../../market/store/records.ts'
import { api } from '../market/market-helpers.ts'
import { startWebMarket } from './web-helpers.ts'

const dev = await startDevChain()
t.teardown(() => dev.stop())
const { url, market } = await startWebMarket(t, dev)
const sample = (await market.ctx.db.listings.get('sample-arm-picks'))!
const now = Date.now()
const made: ListingRecord[] = Array.from({ length: 60 }, (_, i) => ({
  ...sample,
  slug: `walrus-${String(i).padStart(2, '0')}`,
  title: `Walrus readings ${i}`,
  sample: false,
  agentId: '7',
  priceWei: String(BigInt((i * 37) % 60) * 10n ** 15n),
  rows: 1 + ((i * 11) % 60),
  createdAt: now - i * 60_000,
}))
for (const l of made) await market.ctx.db.listings.put(l.slug, l)

const titles = (html: string): string[] =>
  [...html.matchAll(/<h2>(?:<a [^>]*>)?(Walrus readings \d+)(?:<\/a>)?<\/h2>/g)].map((m) => m[1]!)
const href = (html: string, rel: 'next' | 'prev'): string | null => {
  const m = new RegExp(`<a href="([^"]+)" rel="${rel}">`).exec(html)
  return m ? m[1]!.replaceAll('&amp;', '&') : null
}

t.test('sort by price: three pages by cursor, then back', async (t) => {
  const want = [...made]
    .sort((a, b) => Number(BigInt(a.priceWei) - BigInt(b.priceWei)) || (a.slug < b.slug ? -1 : 1))
    .map((l) => l.title)
  const p1 = await api(url, '/marketplace?q=walrus&sort=price')
  t.equal(p1.status, 200)
  t.match(p1.text, '<option value="price" selected>Price, lowest first</option>', 'the sort stays selected')
  t.match(
    p1.text,
    /<label class="sort">Sort <select name="sort">/,
    'a labelled sort control in the filter form',
  )
  t.equal(href(p1.text, 'prev'), null)
  const n1 = href(p1.text, 'next')!
  t.match(n1, /^\/marketplace\?q=walrus&sort=price&cursor=[A-Za-z0-9_-]+&offset=24$/)
  const p2 = await api(url, n1)
  t.match(p2.text, 'Showing 25–48 of 60 listings.')
  const p3 = await api(url, href(p2.text, 'next')!)
  t.match(p3.text, 'Showing 49–60 of 60 listings.')
  t.equal(href(p3.text, 'next'), null, 'no next page after the last')
  t.same(
    [...titles(p1.text), ...titles(p2.text), ...titles(p3.text)],
    want,
    'each listing once, in price order',
  )
  const prev = href(p3.text, 'prev')!
  t.match(prev, /before=[A-Za-z0-9_-]+&offset=24$/)
  const back = await api(url, prev)
  t.same(titles(back.text), titles(p2.text), 'Previous shows the page before')
  t.equal(href(p2.text, 'prev'), '/marketplace?q=walrus&sort=price', 'back to the first page: no cursor')
})

t.test('sort by rows and newest; a bad sort or cursor is a 400 page naming it', async (t) => {
  const rows = await api(url, '/marketplace?q=walrus&sort=rows')
  t.equal(titles(rows.text)[0], made.reduce((a, b) => (b.rows > a.rows ? b : a)).title, 'most rows first')
  const newest = await api(url, '/marketplace?q=walrus')
  t.same(titles(newest.text).slice(0, 3), ['Walrus readings 0', 'Walrus readings 1', 'Walrus readings 2'])
  const bad = await api(url, '/marketplace?sort=cheapest')
  t.equal(bad.status, 400)
  t.match(bad.text, 'Cannot filter: sort: must be one of newest, price, rows')
  const badCursor = await api(url, '/marketplace?cursor=nonsense')
  t.equal(badCursor.status, 400)
  t.match(badCursor.text, 'cursor: not a cursor from this list')
})

t.test("the agent page: totals of all the agent's listings, a page of them, and More", async (t) => {
  const p = await api(url, '/agents/7')
  t.equal(p.status, 200)
  // The totals count every listing of the agent, not the 48 shown.
  t.match(p.text, '<dt>Listings</dt><dd>60 listings</dd>')
  t.match(
    p.text,
    `<dt>Attested lines</dt><dd>${made.reduce((n, l) => n + l.rows, 0).toLocaleString('en')} lines listed in all`,
  )
  t.equal(titles(p.text).length, 48)
  const more = /<a href="([^"]+)" rel="next">More listings<\/a>/.exec(p.text)![1]!
  const p2 = await api(url, more)
  t.same(
    titles(p2.text),
    made.slice(48).map((l) => l.title),
  )
})
