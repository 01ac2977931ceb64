// The console's SOPs, Boards and Attestations pages in a real Chromium (playwright-core) against a
// real hub (engine, LevelDB, embedded broker, a simulated board, the attestation store): trigger
// a SOP by hand from its page, watch a held backlog grow and drain without a reload, send a board
// command and see board events arrive, and no page wider than the viewport at 1366 and 390 px.
// SVC_SCREENSHOTS=1 writes each page at both widths to test-results/screenshots/.
import t from 'tap'
import type { BrowserContext, Page } from 'playwright-core'
import type { AttestStore } from '../../hub/attest/store.ts'
import { findChromium, launchChromium, PHONE, screenshot, screenshotWidths, WIDTHS } from '../web/browser.ts'
import { waitFor } from '../helpers/wait.ts'
import { startConsoleHub } from './console-helpers.ts'
import { BROKEN_SOP, HOLD_SOP, ROUTES_SOP, SALE_SOP } from './console-pages-fixtures.ts'

interface TapTest {
  teardown(fn: () => unknown): void
  passing(): boolean
}

const found = await findChromium()
if (!found.ok) {
  console.log(`# console pages browser tests skipped: ${found.reason}`)
  t.test('console pages browser tests', { skip: found.reason }, async () => {})
} else {
  await browserTests(found.executablePath)
}

async function browserTests(executablePath: string): Promise<void> {
  let store: AttestStore | undefined
  const h = await startConsoleHub(t, {
    sops: { vend: HOLD_SOP, sale: SALE_SOP, 'temperature-check': ROUTES_SOP, broken: BROKEN_SOP },
    boards: ['vend1'],
    parts: (real) => ({
      attestation: async (o) => {
        const a = await real.attestation!(o)
        store = a.console?.store
        return a
      },
    }),
  })
  const { hub, url } = h
  const ctx: BrowserContext = await launchChromium(t, executablePath)
  {
    const page = await ctx.newPage()
    await page.goto(hub.console!.loginLink())
    await page.waitForURL(`${url}/`)
    await page.close()
  }

  async function open(tt: TapTest, name: string, width: number = 1366): Promise<Page> {
    const page = await ctx.newPage()
    await page.setViewportSize({ width, height: width === PHONE ? 844 : 900 })
    page.setDefaultTimeout(60_000)
    tt.teardown(async () => {
      if (!tt.passing()) await screenshot(page, `console-pages-failed-${name}`)
      await page.close()
    })
    return page
  }
  const shot = (page: Page, name: string) => screenshotWidths(page, `console-${name}`)
  /** The document's width against the viewport, and what sticks out (outside a scrolling box). */
  const widths = (page: Page) =>
    page.evaluate(() => {
      const view = window.innerWidth
      // No named function in here: the tests' loader (tsx, esbuild's keepNames) wraps one in a
      // __name() call that does not exist in the page.
      const out = Array.from(document.body.querySelectorAll('*'))
        .filter((e) => {
          if (e.getBoundingClientRect().right <= view + 0.5) return false
          // Inside a box that scrolls sideways and itself fits: not wider than the page.
          for (let p = e.parentElement; p; p = p.parentElement) {
            const o = getComputedStyle(p).overflowX
            if ((o === 'auto' || o === 'scroll') && p.getBoundingClientRect().right <= view + 0.5)
              return false
          }
          return true
        })
        .slice(0, 3)
        .map(
          (e) =>
            `${e.tagName.toLowerCase()}.${e.getAttribute('class') ?? ''} right ${Math.round(e.getBoundingClientRect().right)}`,
        )
      return { doc: document.documentElement.scrollWidth, view, out }
    })
  const marker = async (page: Page): Promise<void> =>
    page.evaluate(() => {
      ;(window as unknown as { marker: number }).marker = 1
    })
  const sameDocument = async (page: Page): Promise<boolean> =>
    (await page.evaluate(() => (window as unknown as { marker?: number }).marker)) === 1

  t.test('trigger a SOP by hand from its page, on a phone; bad JSON is refused on the page', async (t) => {
    const page = await open(t, 'trigger', PHONE)
    await page.goto(`${url}/sops/vend`)
    t.equal(await page.locator('svg.sop-graph g[data-step]').count(), 3, 'the step graph is drawn')
    const runs = async () => (await hub.engine.queryRuns({ sop: 'vend', limit: 100 })).runs.length
    await page.fill('textarea[name=payload]', '{"slot": A1}')
    await Promise.all([page.waitForEvent('load'), page.click('button:has-text("Trigger vend")')])
    t.match(await page.locator('#payload-error').textContent(), /payload is not JSON at line 1, column 10/)
    t.equal(await page.locator('textarea[name=payload]').inputValue(), '{"slot": A1}', 'kept to fix')
    t.equal(await runs(), 0, 'nothing triggered')
    await shot(page, 'sop-bad-payload')

    await page.fill('textarea[name=payload]', '{"slot": "A1", "amount": 2}')
    await Promise.all([page.waitForURL(/outcome=started/), page.click('button:has-text("Trigger vend")')])
    const outcome = page.locator('#trigger-outcome')
    t.match(await outcome.textContent(), /Triggered by hand: run [0-9a-f-]{36} started/)
    const id = new URL(page.url()).searchParams.get('run')!
    t.match(await hub.engine.getRun(id), {
      trigger: { source: 'console', payload: { slot: 'A1', amount: 2 } },
    })
    await page.locator(`#sop-runs tr[data-run="${id}"]`).waitFor()
    await shot(page, 'sop-triggered')
    // Its checkpoint is left waiting: the backlog test below starts from it.
  })

  t.test('a held backlog grows and drains on the open SOPs page, without a reload', async (t) => {
    const page = await open(t, 'held')
    await page.goto(`${url}/sops`)
    await waitFor(() => hub.engine.pending().some((r) => r.sop === 'vend'), 'a vend run parked')
    await marker(page)
    for (let n = 1; n <= 3; n++)
      await hub.engine.trigger('vend', { type: 'manual', source: 'test', payload: { n }, at: Date.now() })
    const held = page.locator('#sops-held tr[data-sop="vend"] td[data-held]')
    await waitFor(
      async () => (await held.getAttribute('data-held').catch(() => null)) === '3',
      'three held on the page',
    )
    await shot(page, 'sops-held')
    for (;;) {
      const parked = hub.engine.pending().find((r) => r.sop === 'vend')
      if (!parked) break
      await hub.engine.approve(parked.id, { by: 'test' })
      await waitFor(
        () =>
          hub.engine.pending().some((r) => r.sop === 'vend' && r.id !== parked.id) ||
          hub.engine.keptTriggers().length === 0,
        'the next vend run',
      )
      if (hub.engine.keptTriggers().length === 0 && !hub.engine.pending().some((r) => r.sop === 'vend')) break
    }
    await page.locator('#sops-held [data-backlog="0"]').waitFor()
    t.ok(await sameDocument(page), 'grew and drained with no reload')
    t.match(await page.locator('#sops-held').textContent(), /No held or deferred triggers/)
  })

  t.test('send a board command from the Boards page; events arrive in the feed', async (t) => {
    const page = await open(t, 'boards', PHONE)
    await waitFor(() => h.bridge()!.stats().boards.vend1?.state === 'online', 'vend1 online')
    await page.goto(`${url}/boards`)
    await page.locator('#board-events[data-live="open"]').waitFor({ state: 'attached' })
    await marker(page)
    h.bridge()!.simulated('vend1')!.emitEvents(5)
    await waitFor(
      async () => (await page.locator('#board-events li').count()) >= 5,
      'five events in the feed',
    )
    t.match(await page.locator('#board-events li').first().textContent(), /vend1 coin \{"slot"/)
    t.ok(await sameDocument(page), 'the feed grew without a reload')
    await page.locator('[data-board="vend1"] [data-counter="events"]:text("5")').waitFor()

    await page.selectOption('select[name=board]', 'vend1')
    await page.fill('input[name=cmd]', 'gpio_write')
    await page.fill('textarea[name=args]', '{"pin": 13, "value": 1}')
    await Promise.all([page.waitForEvent('load'), page.click('button:has-text("Send")')])
    t.match(
      await page.locator('#send-outcome').textContent(),
      /vend1 answered gpio_write: \{"pin":13,"value":1\}/,
    )
    const read = await hub.bridge!.send('vend1', 'gpio_read', { pin: 13 }, { timeoutMs: 5000 })
    t.same(read, { ok: true, result: { pin: 13, value: 1 } }, 'the board did it')
    await shot(page, 'boards-sent')

    await page.fill('input[name=cmd]', 'gpio_write')
    await page.fill('textarea[name=args]', '{"pin": 999, "value": 1}')
    await Promise.all([page.waitForEvent('load'), page.click('button:has-text("Send")')])
    t.match(
      await page.locator('#send-outcome').textContent(),
      /vend1 did not run gpio_write: args.pin: must be/,
    )
    await shot(page, 'boards-refused')
  })

  t.test('the Attestations page follows the store without a reload', async (t) => {
    const page = await open(t, 'attest-live', PHONE)
    await hub.engine.trigger('sale', { type: 'manual', source: 'test', payload: { n: 100 }, at: Date.now() })
    await waitFor(() => (store?.counts().total ?? 0) >= 1, 'a line stored')
    await page.goto(`${url}/attestations`)
    await page.locator('body[data-live="open"]').waitFor({ state: 'attached' })
    await marker(page)
    const failedBefore = store!.counts().failed
    const n = store!.counts().total
    await hub.engine.trigger('sale', { type: 'manual', source: 'test', payload: { n: 101 }, at: Date.now() })
    await waitFor(() => store!.counts().total === n + 1, 'one more line')
    const last = await store!.get(n)
    await store!.update([{ ...last!, state: 'failed', error: 'refused by the registry (live test)' }])
    await page.locator(`[data-figure="failed"]:text("${failedBefore + 1}")`).waitFor()
    await page
      .locator(`#attest-lines tr[data-line="${n + 1}"][data-state="failed"]`)
      .first()
      .waitFor()
    t.ok(await sameDocument(page), 'the new failed line appeared with no reload')
  })

  t.test('no page is wider than the viewport at 1366 and 390 px', async (t) => {
    const page = await open(t, 'widths')
    for (const n of [1, 2, 3])
      await hub.engine.trigger('sale', { type: 'manual', source: 'test', payload: { n }, at: Date.now() })
    await waitFor(() => (store?.counts().total ?? 0) >= 3, 'three lines stored')
    const second = await store!.get(1)
    await store!.update([
      { ...second!, state: 'failed', error: 'request hash taken by another request (0x3f…)' },
    ])
    const pages: [string, string][] = [
      ['sops', '/sops'],
      ['sop', '/sops/vend'],
      ['sop-routes', '/sops/temperature-check'],
      ['sop-missing', '/sops/nope'],
      ['boards', '/boards'],
      ['attestations', '/attestations'],
    ]
    for (const w of WIDTHS) {
      await page.setViewportSize({ width: w, height: w === PHONE ? 844 : 900 })
      for (const [name, path] of pages) {
        await page.goto(url + path)
        const f = await widths(page)
        t.ok(f.doc <= f.view, `${name} at ${w} px: document ${f.doc} px in a ${f.view} px viewport`)
        t.same(f.out, [], `${name} at ${w} px: nothing sticks out`)
      }
    }
    for (const [name, path] of pages) {
      await page.goto(url + path)
      await shot(page, name)
    }
    // The wide diagram scrolls inside its own box on a phone.
    await page.setViewportSize({ width: PHONE, height: 844 })
    await page.goto(`${url}/sops/temperature-check`)
    const box = await page.evaluate(() => {
      const wrap = document.querySelector('.graph') as HTMLElement
      return { client: wrap.clientWidth, scroll: wrap.scrollWidth, view: window.innerWidth }
    })
    t.ok(box.client <= box.view, `the graph's box fits (${box.client} px)`)
    t.ok(box.scroll >= box.client, `and scrolls when the graph is wider (${box.scroll} px)`)
  })
}
