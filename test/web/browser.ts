// Finding and launching Chromium for the browser tests: SVC_CHROMIUM or /usr/bin/chromium
// when present, else the npm package @sparticuz/chromium when installed, else a skip reason.
import { existsSync } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { type BrowserContext, type Page, chromium } from 'playwright-core'
import { tempDir } from '../helpers/tmp.ts'

export type ChromiumFind = { ok: true; executablePath: string } | { ok: false; reason: string }

export async function findChromium(): Promise<ChromiumFind> {
  // SVC_CHROMIUM, when set, is the only path tried (so a missing browser can be simulated too).
  const env = process.env.SVC_CHROMIUM
  const candidates = env ? [env] : ['/usr/bin/chromium', '/usr/bin/chromium-browser']
  for (const p of candidates) if (existsSync(p)) return { ok: true, executablePath: p }
  try {
    // Optional and not a dependency: a variable specifier keeps tsc from requiring it.
    const name = '@sparticuz/chromium'
    const mod = (await import(name)) as { default: { executablePath(): Promise<string> } }
    return { ok: true, executablePath: await mod.default.executablePath() }
  } catch {
    return {
      ok: false,
      reason: `no Chromium: none of ${candidates.join(', ')} exists and @sparticuz/chromium is not installed`,
    }
  }
}

// This machine's network is closed: Chromium's background connections are switched off.
const ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-dev-shm-usage',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]

interface T {
  teardown(fn: () => unknown): void
}

/** A headless Chromium with a fresh user-data-dir, closed (and its profile removed) at teardown. */
export async function launchChromium(t: T, executablePath: string): Promise<BrowserContext> {
  const dir = await tempDir(t, 'svc-chromium-')
  const ctx = await chromium.launchPersistentContext(dir, {
    executablePath,
    headless: true,
    args: ARGS,
    acceptDownloads: true,
    viewport: { width: 1366, height: 900 },
  })
  t.teardown(() => ctx.close())
  return ctx
}

export const SCREENSHOT_DIR = join(process.cwd(), 'test-results', 'screenshots')

/** Full-page screenshot into test-results/screenshots/<name>.png; never fails a test itself. */
export async function screenshot(page: Page, name: string): Promise<void> {
  try {
    await mkdir(SCREENSHOT_DIR, { recursive: true })
    await page.screenshot({
      path: join(SCREENSHOT_DIR, `${name.replace(/[^a-z0-9-]+/gi, '-')}.png`),
      fullPage: true,
    })
  } catch {
    // a closed page has nothing to show
  }
}

export const wantScreenshots = (): boolean => process.env.SVC_SCREENSHOTS === '1'

/** The widths every page is judged at: a desktop and a 390-px phone. */
export const PHONE = 390
export const WIDTHS = [1366, PHONE] as const

/** With SVC_SCREENSHOTS=1: the page as it is now at each of WIDTHS, as `<name>-<width>.png`. */
export async function screenshotWidths(page: Page, name: string): Promise<void> {
  if (!wantScreenshots()) return
  const was = page.viewportSize()
  for (const w of WIDTHS) {
    await page.setViewportSize({ width: w, height: w === PHONE ? 844 : 900 })
    await screenshot(page, `${name}-${w}`)
  }
  if (was) await page.setViewportSize(was)
}

/**
 * The document's width against the viewport's (a page must never scroll sideways) and, when it
 * does, the innermost elements that stick out, to say what to fix.
 */
export const pageWidths = (page: Page): Promise<{ doc: number; view: number; out: string[] }> =>
  page.evaluate(() => {
    const view = window.innerWidth
    const out = Array.from(document.body.querySelectorAll('*'))
      .filter((e) => e.getBoundingClientRect().right > view + 0.5 && e.children.length === 0)
      .slice(0, 3)
      .map(
        (e) =>
          `${e.tagName.toLowerCase()}.${e.className} right ${Math.round(e.getBoundingClientRect().right)}`,
      )
    return { doc: document.documentElement.scrollWidth, view, out }
  })
