// The console's board-firmware pages in a real Chromium against a real in-process hub (the bridge
// on a socat pty with a simulated board): the upload form, the confirmation page with what the
// image holds and what it replaces, and the history after the flash, each at 1366 and 390 px with
// nothing wider than the viewport. The programmer is a stand-in avrdude at the hardware edge that
// reaches no bootloader, so the flash ends `failed` with nothing written (the real write is
// test/hub/flash-e2e.test.ts). SVC_SCREENSHOTS=1 writes each page to test-results/screenshots/.
import { chmod, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { runSimulatorOnPort } from '../../boards/simulator/on-port.ts'
import { toIntelHex } from '../../bridge/flash/intel-hex.ts'
import { resolveConfig } from '../../hub/daemon/config.ts'
import { startHub } from '../../hub/daemon/hub.ts'
import { realParts } from '../../hub/daemon/real-parts.ts'
import { silentLog } from '../../hub/log.ts'
import { noSocat, startPtyPair } from '../bridge/pty.ts'
import { tempDir } from '../helpers/tmp.ts'
import { waitFor } from '../helpers/wait.ts'
import {
  findChromium,
  launchChromium,
  PHONE,
  pageWidths,
  screenshot,
  screenshotWidths,
  WIDTHS,
} from '../web/browser.ts'

const IMAGE = toIntelHex(
  new TextEncoder().encode('\u000c\u0094\u0034\u0000svc-fw:svc-companion/0.3.0;proto=1\u0000'),
)

const found = await findChromium()
const skip = noSocat || (found.ok ? false : found.reason)
if (skip) console.log(`# console flash browser test skipped: ${skip}`)

t.test('board firmware pages: upload, confirm, flash, history', { skip }, async (t) => {
  if (!found.ok) return
  const home = await tempDir(t, 'svc-flash-browser-')
  const env = { ...process.env, SVC_HOME: home }
  const pair = await startPtyPair(home)
  t.teardown(() => pair.stop())
  const sim = await runSimulatorOnPort(pair.board, 'vend1', { rate: 0 })
  if (!sim.ok) throw new Error(sim.error)
  t.teardown(() => sim.sim.stop())
  const avrdude = join(home, 'avrdude')
  await writeFile(
    avrdude,
    '#!/bin/sh\nsleep 0.3\necho "avrdude: stk500_recv(): programmer is not responding" >&2\nexit 1\n',
  )
  await chmod(avrdude, 0o755)
  const cfg = resolveConfig(
    {
      hub: { sops_dir: join(home, 'sops'), data_dir: join(home, 'data'), log_level: 'silent' },
      broker: { port: 0 },
      api: { port: 0 },
      console: { port: 0 },
      webhook: { enabled: false },
      flash: { avrdude, hello_timeout_ms: 2000 },
      boards: [{ name: 'vend1', port: pair.hub, heartbeat_ms: 0, flash: 'uno' }],
    },
    null,
    env,
  )
  if (!cfg.ok) throw new Error(cfg.error)
  const hub = await startHub(cfg.config, silentLog, realParts(env, cfg.config))
  t.teardown(() => hub.close())
  await waitFor(() => hub.bridge!.stats().boards.vend1?.state === 'online', 'vend1 online')
  sim.sim.board.emitRaw('{"event":"hello","board":"vend1","fw":"svc-companion/0.2.0","proto":1}\n')
  await waitFor(() => hub.bridge!.stats().boards.vend1?.fw === 'svc-companion/0.2.0', 'the hello heard')
  const imagePath = join(home, 'new.hex')
  await writeFile(imagePath, IMAGE)

  const ctx = await launchChromium(t, found.executablePath)
  const page = await ctx.newPage()
  page.setDefaultTimeout(60_000)
  t.teardown(async () => {
    if (!t.passing()) await screenshot(page, 'console-flash-failed')
  })
  await page.goto(hub.console!.loginLink())
  await page.waitForURL(`${hub.console!.url}/`)
  const fits = async (name: string) => {
    for (const w of WIDTHS) {
      await page.setViewportSize({ width: w, height: w === PHONE ? 844 : 900 })
      const r = await pageWidths(page)
      t.ok(r.doc <= r.view, `${name} fits ${w} px: ${r.doc} px ${r.out.join(', ')}`)
    }
    await screenshotWidths(page, `console-flash-${name}`)
    await page.setViewportSize({ width: 1366, height: 900 })
  }

  await page.goto(`${hub.console!.url}/boards`)
  await page.click('a[href="/boards/vend1/flash"]')
  t.equal(await page.locator('h1').textContent(), 'Firmware of vend1')
  t.match(await page.locator('main').textContent(), 'svc-companion/0.2.0', 'what the board runs now')
  await fits('upload')

  await page.setInputFiles('input[type=file][name=image]', imagePath)
  await Promise.all([
    page.waitForURL(/\/boards\/vend1\/flash$/),
    page.click('button:text("Check the image")'),
  ])
  t.equal(await page.locator('h1').textContent(), 'Flash vend1?')
  t.match(
    await page.locator('table.flash-plan').textContent(),
    'svc-companion/0.3.0 (line protocol 1)',
    'the confirmation says what the image holds',
  )
  t.equal(hub.bridge!.stats().boards.vend1?.state, 'online', 'nothing happens before the confirmation')
  await fits('confirm')

  await page.click('button:text("Flash now")')
  await page.waitForURL(`${hub.console!.url}/boards/vend1/flash`)
  // The page follows the flash live; it ends `failed` (the stand-in reaches no bootloader).
  const row = page.locator('table.flashes tbody tr').first()
  await waitFor(async () => /failed/.test((await row.textContent()) ?? ''), 'the history row says failed')
  t.match(await row.textContent(), /reading the current image failed/)
  // The page refetches on each event; the last one, the flash's end, leaves no phase shown.
  await waitFor(async () => (await page.locator('#flash-progress').count()) === 0, 'no phase once it ended')
  await waitFor(() => hub.bridge!.stats().boards.vend1?.state === 'online', 'the port is back')
  await fits('history')
})
