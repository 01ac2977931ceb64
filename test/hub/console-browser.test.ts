// The hub console in a real Chromium (playwright-core) against a real hub (engine, LevelDB,
// embedded broker, a simulated board): sign in by link and by password, approve and deny on a
// 390-px phone, a run's step outputs, a board going offline and online without a reload, live
// refetches never closer than a second apart, and no page wider than the viewport.
// SVC_SCREENSHOTS=1 writes each page at 1366 and 390 px to test-results/screenshots/.
import t from 'tap'
import type { BrowserContext, Page } from 'playwright-core'
import {
  findChromium,
  launchChromium,
  PHONE,
  pageWidths,
  screenshot,
  screenshotWidths,
  WIDTHS,
  wantScreenshots,
} from '../web/browser.ts'
import { waitFor } from '../helpers/wait.ts'
import { consolePasswordCommand } from '../../cli/hub-console-password.ts'
import { tempDir } from '../helpers/tmp.ts'
import { APPROVAL_SOP, type ConsoleHub, startConsoleHub, triggerRun } from './console-helpers.ts'

const PASSWORD = 'correct horse battery staple'

interface TapTest {
  teardown(fn: () => unknown): void
  passing(): boolean
}

const found = await findChromium()
if (!found.ok) {
  console.log(`# console browser tests skipped: ${found.reason}`)
  t.test('console browser tests', { skip: found.reason }, async () => {})
} else {
  await browserTests(found.executablePath)
}

async function browserTests(executablePath: string): Promise<void> {
  const home = await tempDir(t)
  const set = await consolePasswordCommand({ readStdin: async () => `${PASSWORD}\n`, prompt: null })(
    ['--password-stdin'],
    { out: () => {}, err: () => {}, env: { SVC_HOME: home }, cwd: home },
  )
  if (set !== 0) throw new Error('could not set the console password')
  const h: ConsoleHub = await startConsoleHub(t, {
    home,
    sops: { dispense: APPROVAL_SOP },
    boards: ['vend1'],
    heartbeatMs: 100,
  })
  const { hub, url } = h
  const ctx: BrowserContext = await launchChromium(t, executablePath)

  async function open(tt: TapTest, name: string, width: number = 1366): Promise<Page> {
    const page = await ctx.newPage()
    await page.setViewportSize({ width, height: width === PHONE ? 844 : 900 })
    page.setDefaultTimeout(60_000)
    tt.teardown(async () => {
      if (!tt.passing()) await screenshot(page, `console-failed-${name}`)
      await page.close()
    })
    return page
  }
  const shot = (page: Page, name: string) => screenshotWidths(page, `console-${name}`)
  const widths = pageWidths
  const smallTargets = (page: Page): Promise<string[]> =>
    page.evaluate(() => {
      const out: string[] = []
      for (const el of Array.from(
        document.querySelectorAll(
          'button, input:not([type=hidden]):not([type=radio]), select, textarea, summary, .top nav a, .pager a',
        ),
      )) {
        const r = el.getBoundingClientRect()
        if (r.width === 0 && r.height === 0) continue
        if (r.height < 43.5)
          out.push(
            `${el.tagName.toLowerCase()} "${(el.textContent ?? '').trim().slice(0, 30)}" ${Math.round(r.height)}px`,
          )
      }
      return out
    })

  t.test('signed out: the sign-in page; a wrong password says so; the right one signs in', async (t) => {
    await ctx.clearCookies()
    const page = await open(t, 'password')
    await page.goto(`${url}/runs`)
    t.equal(new URL(page.url()).pathname, '/login', 'sent to sign in')
    await shot(page, 'login')
    await page.fill('input[name=password]', 'not the password')
    await Promise.all([page.waitForEvent('load'), page.click('button[type=submit]')])
    t.match(await page.locator('.error').textContent(), /wrong password/)
    await page.fill('input[name=password]', PASSWORD)
    await Promise.all([page.waitForURL(`${url}/runs`), page.click('button[type=submit]')])
    t.equal(await page.locator('h1').textContent(), 'Runs', 'back where it was going')
    await Promise.all([page.waitForURL(`${url}/login`), page.click('.signout button')])
    t.equal(new URL(page.url()).pathname, '/login', 'signed out')
  })

  t.test('a one-time link signs in, and leaves no token in the address bar', async (t) => {
    await ctx.clearCookies()
    const page = await open(t, 'link')
    await page.goto(hub.console!.loginLink())
    await page.waitForURL(`${url}/`)
    t.equal(await page.locator('h1').textContent(), 'Overview')
    t.notMatch(page.url(), /token/)
    // The same link again: refused, said on the page.
    const link = hub.console!.loginLink()
    await ctx.clearCookies()
    await page.goto(link)
    await page.waitForURL(`${url}/`)
    await ctx.clearCookies()
    await page.goto(link)
    await page.locator('#link-status.error').waitFor()
    t.match(await page.locator('#link-status').textContent(), /already used or has expired/)
    await ctx.clearCookies()
    await page.goto(hub.console!.loginLink())
    await page.waitForURL(`${url}/`)
  })

  t.test(
    'approve and deny from the Approvals page on a 390-px phone; the run shows its outputs',
    async (t) => {
      const page = await open(t, 'approvals', PHONE)
      const a = await triggerRun(hub, 'dispense', { slot: 'A1', amount: 2 })
      const b = await triggerRun(hub, 'dispense', { slot: 'B7', amount: 1 })
      await waitFor(() => hub.engine.pending().length === 2, 'two parked runs')
      await page.goto(`${url}/approvals`)
      await page.locator(`[data-run="${a}"]`).waitFor()
      await shot(page, 'approvals')
      const cardA = page.locator(`[data-run="${a}"]`)
      t.match(await cardA.textContent(), /Coin received; dispense the item from the slot\?/)
      t.match(await cardA.locator('pre').textContent(), /"slot": "A1"/)
      await cardA.locator('textarea[name=note]').fill('checked the slot')
      await Promise.all([page.waitForURL(/done=approved/), cardA.locator('button[value=approve]').click()])
      t.match(await page.locator('p.ok').textContent(), new RegExp(`Run ${a} approved`))
      await waitFor(async () => (await hub.engine.getRun(a))?.state === 'completed', 'run a completed')

      const cardB = page.locator(`[data-run="${b}"]`)
      await cardB.locator('textarea[name=note]').fill('slot empty')
      await Promise.all([page.waitForURL(/done=denied/), cardB.locator('button[value=deny]').click()])
      t.equal((await hub.engine.getRun(b))?.state, 'cancelled')
      t.match((await hub.engine.getRun(b))?.approvals, [
        { decision: 'denied', by: 'owner (console)', note: 'slot empty' },
      ])
      await page.locator('[data-empty]').waitFor()
      await shot(page, 'approvals-empty')

      // A new run appears on the open page by itself.
      await page.evaluate(() => {
        ;(window as unknown as { marker: number }).marker = 1
      })
      const c = await triggerRun(hub, 'dispense', { slot: 'C3' })
      await page.locator(`[data-run="${c}"]`).waitFor()
      t.equal(await page.evaluate(() => (window as unknown as { marker?: number }).marker), 1, 'no reload')
      await page.locator(`[data-run="${c}"] button[value=approve]`).click()
      await page.waitForURL(/done=approved/)

      await page.goto(`${url}/runs/${a}`)
      const outputs = await page.locator('pre[data-output]').allTextContents()
      t.ok(outputs.length >= 2, `step outputs shown (${outputs.length})`)
      t.match(
        await page.locator('ul.approvals').textContent(),
        /approved at step 2 \(checkpoint\) by owner \(console\).*checked the slot/,
      )
      t.match(await page.locator('pre[data-payload]').textContent(), /"amount": 2/)
      await shot(page, 'run')
    },
  )

  t.test('a board goes offline and online on the open overview, without a reload', async (t) => {
    const page = await open(t, 'board-live')
    // Each refetch the page's script makes, timed in the page itself.
    await page.addInitScript(() => {
      const w = window as unknown as { refetches: number[] }
      w.refetches = []
      const f = window.fetch.bind(window)
      window.fetch = (input, init) => {
        if (String(input) === location.href) w.refetches.push(performance.now())
        return f(input, init)
      }
    })
    await page.goto(`${url}/`)
    const state = page.locator('[data-board="vend1"] [data-availability]')
    await waitFor(async () => (await state.textContent()) === 'online', 'vend1 online on the page')
    await page.evaluate(() => {
      ;(window as unknown as { marker: number }).marker = 1
    })
    const sim = h.bridge()!.simulated('vend1')!
    // A burst of board events: the page refetches at most once a second however many arrive.
    sim.emitEvents(40)
    sim.setMute(true)
    await waitFor(async () => (await state.textContent()) === 'offline', 'vend1 offline on the page')
    await shot(page, 'overview-offline')
    sim.setMute(false)
    await waitFor(async () => (await state.textContent()) === 'online', 'vend1 online again on the page')
    t.equal(await page.evaluate(() => (window as unknown as { marker?: number }).marker), 1, 'no reload')
    const refetches = await page.evaluate(() => (window as unknown as { refetches: number[] }).refetches)
    t.ok(refetches.length >= 2, `the page refetched (${refetches.length} times)`)
    const gaps = refetches.slice(1).map((x, i) => x - refetches[i]!)
    t.ok(
      gaps.every((g) => g >= 999),
      `refetches at least a second apart (gaps ${gaps.map(Math.round).join(', ')} ms)`,
    )
    t.match(await page.locator('[data-board="vend1"]').textContent(), /last event/)
  })

  t.test('no page is wider than the viewport at 1366 and 390 px; touch targets of 44 px', async (t) => {
    const page = await open(t, 'widths')
    const parked = await triggerRun(hub, 'dispense', { slot: 'D4', note: 'x'.repeat(300) })
    await waitFor(() => hub.engine.pending().some((r) => r.id === parked), 'a parked run')
    const done = (await hub.engine.queryRuns({ state: 'completed', limit: 1 })).runs[0]!.id
    const pages: [string, string][] = [
      ['overview', '/'],
      ['approvals-one', '/approvals'],
      ['runs', '/runs'],
      ['runs-filtered', '/runs?state=completed&since=today'],
      ['runs-bad-filter', '/runs?state=nope'],
      ['run', `/runs/${done}`],
      ['run-waiting', `/runs/${parked}`],
      ['run-missing', '/runs/00000000-0000-4000-8000-000000000000'],
      ['not-found', '/nothing/here'],
    ]
    for (const w of WIDTHS) {
      await page.setViewportSize({ width: w, height: w === PHONE ? 844 : 900 })
      for (const [name, path] of pages) {
        await page.goto(url + path)
        const f = await widths(page)
        t.ok(
          f.doc <= f.view,
          `${path} at ${w} px: document ${f.doc} px ≤ viewport ${f.view} px ${f.out.join(', ')}`,
        )
        t.same(await smallTargets(page), [], `${path} at ${w} px: touch targets ≥ 44 px`)
        if (wantScreenshots()) await screenshot(page, `console-page-${name}-${w}`)
      }
    }
    await ctx.clearCookies()
    for (const w of WIDTHS) {
      await page.setViewportSize({ width: w, height: w === PHONE ? 844 : 900 })
      await page.goto(`${url}/login`)
      const f = await widths(page)
      t.ok(f.doc <= f.view, `/login at ${w} px: document ${f.doc} px ≤ viewport ${f.view} px`)
      t.same(await smallTargets(page), [], `/login at ${w} px: touch targets ≥ 44 px`)
    }
    await page.goto(hub.console!.loginLink())
    await page.waitForURL(`${url}/`)
    await hub.engine.approve(parked, { by: 'test' })
  })
}
