// The website in a real Chromium (playwright-core) against a real market on loopback and a
// real anvil chain, with an EIP-1193 wallet injected into the page that signs with anvil keys:
// browse, verify, sign in, issue a key, buy, download; a wrong-network wallet and rejected
// signatures shown as clear messages. Screenshots on failure go to test-results/screenshots/.
import { readFile } from 'node:fs/promises'
import t from 'tap'

interface TapTest {
  teardown(fn: () => unknown): void
  passing(): boolean
}
import type { BrowserContext, Page } from 'playwright-core'
import { anvilAccount } from '../../chain/accounts.ts'
import { identityRegistryAbi } from '../../chain/abi.generated.ts'
import { publicClientFor, walletClientFor } from '../../chain/clients.ts'
import { registerAgent } from '../../chain/deploy.ts'
import { startDevChain } from '../../chain/dev.ts'
import { createListing } from '../../hub/listing/create.ts'
import { postListing as postFromHub } from '../../hub/listing/post.ts'
import { FIELDS, storeWith } from '../listing/fixtures.ts'
import { writeRows } from '../market/chain-rows.ts'
import { canonicalLine } from '../../records/index.ts'
import {
  type Dataset,
  api,
  dataset,
  datasetFrom,
  goodFields,
  issueKey,
  postListing,
  signIn,
} from '../market/market-helpers.ts'
import {
  findChromium,
  launchChromium,
  PHONE,
  pageWidths,
  screenshot,
  screenshotWidths,
  WIDTHS,
  wantScreenshots,
} from './browser.ts'
import { type TestWallet, type WalletBehaviour, injectWallet } from './wallet.ts'
import { startWebMarket } from './web-helpers.ts'

// The smallest valid PNG: one pixel.
const PNG_1X1 = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
)

const found = await findChromium()
if (!found.ok) {
  console.log(`# browser tests skipped: ${found.reason}`)
  t.test('browser tests', { skip: found.reason }, async () => {})
} else {
  await browserTests(found.executablePath)
}

async function browserTests(executablePath: string): Promise<void> {
  const dev = await startDevChain()
  t.teardown(() => dev.stop())
  const { url } = await startWebMarket(t, dev)
  const pub = publicClientFor(dev.rpcUrl)

  // Two listings made through the API as a device would: one fully attested, one with a row
  // answered 99 and a row never requested.
  const owner = dev.accounts.owner.privateKey
  const ownerCookie = await signIn(url, owner)
  const deviceKey = (await issueKey(url, ownerCookie, owner, dev.agentId)).json.key as string
  const good: Dataset = dataset(12, dev.agentId)
  await writeRows(
    dev,
    good.manifest.rows.map((r) => ({ requestHash: r.requestHash, paramsHash: r.paramsHash })),
  )
  const goodListing = await postListing(url, deviceKey, good, {
    fields: { ...goodFields, title: 'Attested vends, all rows' },
    image: PNG_1X1,
    extra: [['preview', '3']],
  })
  if (goodListing.status !== 201) throw new Error(`listing failed: ${JSON.stringify(goodListing.json)}`)
  const goodSlug = goodListing.json.slug as string
  const mixed = dataset(10, dev.agentId)
  await writeRows(dev, [
    ...mixed.manifest.rows.slice(0, 8).map((r) => ({ requestHash: r.requestHash, paramsHash: r.paramsHash })),
    {
      requestHash: mixed.manifest.rows[8]!.requestHash,
      paramsHash: mixed.manifest.rows[8]!.paramsHash,
      response: 99,
    },
  ])
  const mixedListing = await postListing(url, deviceKey, mixed, {
    fields: { ...goodFields, title: 'Vends with two bad rows', machineType: 'sensor' },
  })
  const mixedSlug = mixedListing.json.slug as string
  // A listing made by the hub's own code (svc listing create --preview 2): attested lines from a
  // real attestation store, built, queued and posted with the device key.
  const hubStore = await storeWith(t, ['attested', 'attested', 'attested', 'attested'])
  const hubMade = await createListing({
    home: hubStore.home,
    fields: { ...FIELDS, title: 'Made by the hub' },
    range: {},
    market: url,
    store: hubStore.store,
    agentId: dev.agentId,
    preview: 2,
  })
  if (!hubMade.ok) throw new Error(hubMade.error)
  const hubPosted = await postFromHub(hubMade.dir, hubMade.entry, deviceKey)
  if (hubPosted.kind !== 'posted') throw new Error(`hub listing not posted: ${JSON.stringify(hubPosted)}`)
  const hubSlug = hubPosted.slug

  const ctx: BrowserContext = await launchChromium(t, executablePath)

  interface Opened {
    page: Page
    wallet: TestWallet | null
  }
  /** A fresh page (no cookies) with an optional injected wallet; screenshot when the test fails. */
  async function open(
    t: TapTest,
    name: string,
    walletKey?: `0x${string}`,
    behaviour: Partial<WalletBehaviour> = {},
  ): Promise<Opened> {
    await ctx.clearCookies()
    const page = await ctx.newPage()
    // Generous: on a loaded 2-core CI machine a wait only ends early on success.
    page.setDefaultTimeout(60_000)
    const wallet = walletKey ? await injectWallet(page, walletKey, dev.rpcUrl, dev.chainId, behaviour) : null
    t.teardown(async () => {
      if (!t.passing()) await screenshot(page, `failed-${name}`)
      await page.close()
    })
    return { page, wallet }
  }
  const shot = screenshotWidths
  const widths = pageWidths
  /** Visible controls shorter than 44 px (WCAG 2.5.5): buttons, fields, summaries, nav links. */
  const smallTargets = (page: Page): Promise<string[]> =>
    page.evaluate(() => {
      const out: string[] = []
      const sel =
        'button, input:not([type=checkbox]):not([type=hidden]), select, summary, .top nav a, .foot nav a, .pager a, .crumbs a'
      for (const el of Array.from(document.querySelectorAll(sel))) {
        const r = el.getBoundingClientRect()
        if (r.width === 0 && r.height === 0) continue
        if (r.height < 43.5)
          out.push(
            `${el.tagName.toLowerCase()} "${(el.textContent ?? '').trim().slice(0, 30)}" ${Math.round(r.height)}px`,
          )
      }
      return out
    })
  const text = async (page: Page, sel: string, has: string | RegExp): Promise<string> => {
    const loc = page.locator(sel).filter({ hasText: has })
    await loc.first().waitFor()
    return (await loc.first().textContent()) ?? ''
  }

  /** Basic accessibility facts of the current page: problems found, empty when none. */
  const a11y = (page: Page): Promise<string[]> =>
    page.evaluate(() => {
      const out: string[] = []
      if (document.querySelectorAll('h1').length !== 1)
        out.push(`${document.querySelectorAll('h1').length} h1 elements`)
      if (!document.documentElement.lang) out.push('no lang on <html>')
      for (const el of Array.from(
        document.querySelectorAll<HTMLInputElement | HTMLSelectElement>('input, select'),
      )) {
        if (el.type === 'hidden') continue
        if (!(el.labels && el.labels.length > 0) && !el.getAttribute('aria-label'))
          out.push(`unlabelled ${el.tagName.toLowerCase()} ${el.name || el.id}`)
      }
      for (const b of Array.from(document.querySelectorAll('button, a[href]')))
        if (!(b.textContent ?? '').trim() && !b.getAttribute('aria-label'))
          out.push(`nameless ${b.tagName.toLowerCase()}`)
      for (const img of Array.from(document.querySelectorAll('img')))
        if (!img.hasAttribute('alt')) out.push(`img without alt: ${img.getAttribute('src')}`)
      if (!document.querySelector('main')) out.push('no <main>')
      return out
    })

  t.test('pages have one h1, labelled controls, named buttons and links, images with alt', async (t) => {
    const { page } = await open(t, 'a11y', owner)
    await page.goto(`${url}/keys`)
    await Promise.all([page.waitForEvent('load'), page.click('#sign-in')])
    for (const path of [
      '/marketplace',
      `/marketplace/${goodSlug}`,
      `/marketplace/${mixedSlug}`,
      '/marketplace/sample-arm-picks',
      `/agents/${dev.agentId}`,
      '/keys',
      '/purchases',
      '/licenses',
      '/licenses/commercial',
      '/api/docs',
      '/guide/local-chain',
      `/marketplace/${hubSlug}`,
      '/marketplace/nope',
      '/agents/999',
    ]) {
      await page.goto(url + path)
      t.same(await a11y(page), [], path)
    }
    // The check itself finds each kind of problem.
    await page.setContent('<html><body><input name="x"><img src="data:,"><button></button></body></html>')
    t.same(await a11y(page), [
      '0 h1 elements',
      'no lang on <html>',
      'unlabelled input x',
      'nameless button',
      'img without alt: data:,',
      'no <main>',
    ])
  })

  t.test(
    'browse without a wallet: filters, search, a bad filter, a listing, and sign-in says no wallet',
    async (t) => {
      const { page } = await open(t, 'browse')
      await page.goto(`${url}/marketplace`)
      const titles = await page.locator('.cards h2').allTextContents()
      t.ok(titles.includes('Attested vends, all rows'), 'a device listing is shown')
      t.ok(titles.includes('Sample: robot arm pick and place'), 'a sample listing is shown')
      await shot(page, 'browse')
      await page.selectOption('select[name=machineType]', 'arm')
      await page.click('button[type=submit]')
      await page.waitForURL(/machineType=arm/)
      t.same(
        await page.locator('.cards h2').allTextContents(),
        ['Sample: robot arm pick and place'],
        'only arm listings',
      )
      await page.goto(`${url}/marketplace`)
      await page.fill('input[name=q]', 'bad rows')
      await page.press('input[name=q]', 'Enter')
      await page.waitForURL(/q=bad/)
      t.same(
        await page.locator('.cards h2').allTextContents(),
        ['Vends with two bad rows'],
        'search by title',
      )
      await page.fill('input[name=minPrice]', 'cheap')
      await page.click('button[type=submit]')
      t.match(await text(page, '[role=alert]', 'Cannot filter'), 'minPrice: must be a decimal price')
      await page.goto(`${url}/marketplace`)
      await page.click('text=Attested vends, all rows')
      await page.waitForURL(`${url}/marketplace/${goodSlug}`)
      t.equal(await page.locator('h1').textContent(), 'Attested vends, all rows')
      t.equal(await page.locator('#row-count').textContent(), '12')
      const cover = page.locator('img.cover')
      t.equal(await cover.getAttribute('alt'), 'Cover image of Attested vends, all rows')
      t.equal(await cover.evaluate((img: HTMLImageElement) => img.naturalWidth), 1, 'the cover image loads')
      await page.goto(`${url}/keys`)
      t.match(
        await page.locator('main').textContent(),
        'How a machine lists its data',
        'the keys page explains agents and keys',
      )
      t.equal(await page.locator('main button.sign-in-here').count(), 1, 'with its own sign-in button')
      await shot(page, 'keys-no-wallet')
      await page.click('main button.sign-in-here')
      t.match(
        await text(page, '#session-status', 'No wallet'),
        'No wallet found. To sign in, install a browser wallet (EIP-1193). Browsing and verifying need no wallet.',
      )
    },
  )

  t.test('markup in a listing from a device is shown as text and never runs', async (t) => {
    const hostile = `<img src=x onerror="window.__pwned=1">`
    const ds = dataset(1, dev.agentId)
    const l = await postListing(url, deviceKey, ds, {
      fields: {
        ...goodFields,
        title: `T ${hostile}`,
        summary: `S ${hostile}`,
        description: `Description ${hostile} <script>window.__pwned=2</script>`,
      },
    })
    t.equal(l.status, 201)
    const { page } = await open(t, 'hostile')
    for (const path of [`/marketplace/${l.json.slug as string}`, '/marketplace', `/agents/${dev.agentId}`]) {
      await page.goto(url + path)
      t.equal(
        await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned),
        undefined,
        `${path}: nothing ran`,
      )
      t.equal(await page.locator('img[src=x]').count(), 0, `${path}: no injected element`)
      t.ok(await page.getByText(`T ${hostile}`).first().isVisible(), `${path}: the title is shown as text`)
    }
    await page.goto(`${url}/agents/${dev.agentId}`)
    t.equal(await page.locator('.chart svg').count(), 1, 'the agent page draws its operations chart')
    await shot(page, 'agent')

    // Hostile data lines: markup in a field name and in values, a 10 KB string, deep nesting.
    let deep: Record<string, unknown> = { leaf: '<img src=x onerror="window.__pwned=4">' }
    for (let i = 0; i < 300; i++) deep = { n: deep }
    const lines = [
      canonicalLine({
        [hostile]: hostile,
        action: `<svg onload="window.__pwned=3">`,
        at: '2026-02-01T00:00:00Z',
      }),
      canonicalLine({ action: 'x'.repeat(10_000), note: `${hostile}${'y'.repeat(10_000)}` }),
      canonicalLine({ deep, action: 'ok' }),
    ]
    const hp = await postListing(url, deviceKey, datasetFrom(lines, dev.agentId), {
      fields: { ...goodFields, title: 'Hostile preview lines' },
      extra: [['preview', '3']],
    })
    t.equal(hp.status, 201, JSON.stringify(hp.json))
    for (const w of WIDTHS) {
      await page.setViewportSize({ width: w, height: w === PHONE ? 844 : 900 })
      for (const path of [
        `/marketplace/${hp.json.slug as string}`,
        '/marketplace',
        `/agents/${dev.agentId}`,
      ]) {
        await page.goto(url + path)
        t.equal(
          await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned),
          undefined,
          `${path} at ${w} px: nothing from the lines ran`,
        )
        t.equal(
          await page.locator('[onerror], [onload]').count(),
          0,
          `${path} at ${w} px: no injected handler`,
        )
        const f = await widths(page)
        t.ok(f.doc <= f.view, `${path} at ${w} px: ${f.doc} px ≤ ${f.view} px ${f.out.join(', ')}`)
      }
      t.equal(await page.locator('.sample-line').count(), 0, 'the agent page shows no data lines')
      await page.goto(`${url}/marketplace/${hp.json.slug as string}`)
      t.ok(
        await page.locator('#preview td code').filter({ hasText: hostile }).first().isVisible(),
        'the field name with markup is shown as text',
      )
      t.match(
        await page.locator('#preview .sample-line').nth(1).textContent(),
        'Cut for display: the line is',
      )
      t.ok(
        ((await page.locator('#preview .sample-line pre').nth(1).textContent()) ?? '').length <= 2001,
        'the 10 KB line is cut to 2,000 characters',
      )
    }
    await shot(page, 'listing-hostile-preview')
    await page.setViewportSize({ width: 1366, height: 900 })
  })

  t.test('verify shows rows passed, and failed rows with their reasons', async (t) => {
    const { page } = await open(t, 'verify')
    await page.goto(`${url}/marketplace/${goodSlug}`)
    await page.click('#verify-button')
    t.equal((await text(page, '#verify-status', 'Verified')).trim(), 'Verified: all 12 rows passed.')
    t.equal(await page.locator('#verify-result tbody tr').count(), 8, 'the first eight rows are shown')
    t.equal(await page.locator('#verify-result td.ok').count(), 8)
    t.same(
      await page.locator('#preview .sample-head span').allTextContents(),
      ['Passed just now.', 'Passed just now.', 'Passed just now.'],
      'each published sample line shows its own verdict',
    )
    t.equal(
      await page.locator('p.verification .tag').textContent(),
      'verified',
      'the badge follows the verdict',
    )
    await shot(page, 'listing-verified')
    await page.goto(`${url}/marketplace/${mixedSlug}`)
    await page.click('#verify-button')
    t.equal(
      (await text(page, '#verify-status', 'Not verified')).trim(),
      'Not verified: 8 rows passed, 2 failed (of 10).',
    )
    const failures = await page.locator('#verify-result table').nth(1).locator('td.bad').allTextContents()
    t.equal(failures.length, 2)
    t.match(failures[0], /^Failed: condition 3: response: 99, expected 100/)
    t.match(failures[1], /^Failed: requestHash: unknown to the validation registry/)
    t.equal(await page.locator('p.verification .tag').textContent(), 'verification failed')
    t.ok(await page.locator('#accept-unverified').isVisible(), 'Buy now asks the buyer to accept the failure')
    await shot(page, 'listing-verify-failures')
    await page.goto(`${url}/marketplace/sample-arm-picks`)
    await page.click('#verify-button')
    t.match(
      await text(page, '#verify-status', 'Sample listing'),
      'Sample listing: 24 rows; none was read from the chain',
    )
    t.match(
      (await page.locator('section[aria-labelledby=buy-h]').textContent()) ?? '',
      'a sample listing: demo data, not attested and not for sale',
    )
    t.equal(await page.locator('#buy-button').count(), 0, 'no Buy button for a sample')
  })

  t.test('sign in, issue a key shown once with a copy button, and list keys', async (t) => {
    await ctx.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: url })
    const { page } = await open(t, 'keys', owner)
    await page.goto(`${url}/keys`)
    t.match(await page.locator('main').textContent(), 'Sign in with the wallet that owns')
    await Promise.all([page.waitForEvent('load'), page.click('#sign-in')])
    t.match(await text(page, '.who', 'Signed in as'), dev.accounts.owner.address.slice(0, 6))
    await page.fill('#agent-id', dev.agentId)
    await page.click('#issue-button')
    t.match(
      await text(page, '#issue-status', 'issued'),
      `issued for agent ${dev.agentId} (device ${dev.accounts.device.address})`,
    )
    const key = await page.inputValue('#new-key-value')
    t.match(key, /^svc_[A-Za-z0-9_-]{43}$/)
    t.equal(
      await page.locator('#key-command').textContent(),
      `npx svc key set ${key} --market ${url}`,
      'the page says what to run on the device',
    )
    await shot(page, 'keys-issued')
    await page.setViewportSize({ width: PHONE, height: 844 })
    const issued = await widths(page)
    t.ok(issued.doc <= issued.view, `the issued key fits a phone: ${issued.doc} px ${issued.out.join(', ')}`)
    await page.setViewportSize({ width: 1366, height: 900 })
    await page.click('#copy-key')
    t.equal(await text(page, '#copy-status', /./), 'Copied to the clipboard.')
    t.equal(await page.evaluate(() => navigator.clipboard.readText()), key, 'the clipboard holds the key')
    t.ok(
      await page
        .locator('#key-rows')
        .getByText(`svc_${key.slice(4, 12)}…`)
        .isVisible(),
      'the new key is listed by its prefix',
    )
    // The key is real: a device can list with it.
    const l = await postListing(url, key, dataset(2, dev.agentId))
    t.equal(l.status, 201, 'the issued key lists a dataset')
    await page.reload()
    t.equal(await page.inputValue('#new-key-value'), '', 'after a reload the key is gone: shown once')
    t.notMatch(await page.content(), key)
    t.equal(
      await page.locator('#key-rows tr').count(),
      2,
      'this account has two keys: one from the setup and this one',
    )
    // Revoke the new key from the page: the device can no longer list with it.
    page.once('dialog', (d) => void d.accept())
    await page.click(`button.revoke[aria-label="Revoke key svc_${key.slice(4, 12)}…"]`)
    t.equal(
      (await text(page, '#revoke-status', 'revoked')).trim(),
      `Key svc_${key.slice(4, 12)}… revoked: it can no longer list.`,
    )
    t.match(await text(page, '#key-rows tr', 'revoked by its owner'), `svc_${key.slice(4, 12)}…`)
    const refused = await postListing(url, key, dataset(1, dev.agentId))
    t.equal(refused.status, 403, 'a revoked key can no longer list')
    t.match(refused.json.error, 'was revoked: revoked by its owner')
    t.equal(await page.locator('button.revoke').count(), 1, 'only the setup key is still revocable')
  })

  t.test('a key whose agent changed hands is shown revoked, naming the new holder', async (t) => {
    const [holder, newOwner] = [anvilAccount(8), anvilAccount(9)]
    const w = walletClientFor(dev.rpcUrl, holder.privateKey)
    const pub = publicClientFor(dev.rpcUrl)
    const agentId = (await registerAgent(w, pub, dev.identityRegistry, 'svc://agents/sold')).toString()
    const old = await issueKey(url, await signIn(url, holder.privateKey), holder.privateKey, agentId)
    t.equal(old.status, 201, JSON.stringify(old.json))
    await pub.waitForTransactionReceipt({
      hash: await w.writeContract({
        address: dev.identityRegistry,
        abi: identityRegistryAbi,
        functionName: 'transferFrom',
        args: [holder.address, newOwner.address, BigInt(agentId)],
      }),
    })
    const fresh = await issueKey(url, await signIn(url, newOwner.privateKey), newOwner.privateKey, agentId)
    t.equal(fresh.status, 201, 'the new owner’s key call')
    const { page } = await open(t, 'keys-agent-sold', holder.privateKey)
    await page.goto(`${url}/keys`)
    await Promise.all([page.waitForEvent('load'), page.click('#sign-in')])
    const prefix = `svc_${(old.json.key as string).slice(4, 12)}…`
    await text(page, '#key-rows tr', prefix)
    t.equal(
      (await page.locator('#key-rows tr', { hasText: prefix }).locator('td').nth(5).textContent())!.trim(),
      `revoked: wallet ${holder.address.toLowerCase()} no longer holds agent ${agentId}: it is held by ${newOwner.address.toLowerCase()}`,
    )
    t.equal(await page.locator('button.revoke').count(), 0, 'nothing left to revoke')
    await shot(page, 'keys-agent-sold')
    await page.setViewportSize({ width: PHONE, height: 844 })
    const fit = await widths(page)
    t.ok(fit.doc <= fit.view, `the reason fits a phone: ${fit.doc} px ${fit.out.join(', ')}`)
  })

  t.test('a wallet that does not own the agent is told so', async (t) => {
    const buyer = dev.accounts.buyer
    const { page } = await open(t, 'keys-not-owner', buyer.privateKey)
    await page.goto(`${url}/keys`)
    await Promise.all([page.waitForEvent('load'), page.click('#sign-in')])
    await page.fill('#agent-id', dev.agentId)
    await page.click('#issue-button')
    t.equal(
      (await text(page, '#issue-status', 'not the owner')).trim(),
      `wallet ${buyer.address} is not the owner of agent ${dev.agentId}`,
    )
    t.ok(await page.locator('#new-key').isHidden(), 'no key is shown')
  })

  t.test(
    'buy: sign in, pay from the wallet, sign the unlock message, download data and manifest',
    async (t) => {
      const buyer = dev.accounts.buyer
      const { page, wallet } = await open(t, 'buy', buyer.privateKey)
      const before = await pub.getBalance({ address: dev.accounts.payout.address })
      await page.goto(`${url}/marketplace/${goodSlug}`)
      await page.click('#buy-button')
      t.match(
        await text(page, '#buy-status', 'Unlocked'),
        'Unlocked. Download the data and the manifest below.',
      )
      t.match(
        await page.locator('.who').textContent(),
        `Signed in as ${buyer.address.slice(0, 6)}`,
        'the header shows the sign-in Buy made',
      )
      const after = await pub.getBalance({ address: dev.accounts.payout.address })
      t.equal(after - before, 50_000_000_000_000_000n, 'the payout address received the price, 0.05')
      t.equal(wallet!.calls.filter((c) => c === 'eth_sendTransaction').length, 1, 'one payment')
      t.equal(wallet!.calls.filter((c) => c === 'personal_sign').length, 2, 'sign-in and unlock signatures')
      await shot(page, 'listing-bought')
      await page.setViewportSize({ width: PHONE, height: 844 })
      const bought = await widths(page)
      t.ok(bought.doc <= bought.view, `the receipt fits a phone: ${bought.doc} px ${bought.out.join(', ')}`)
      await page.setViewportSize({ width: 1366, height: 900 })
      const [data] = await Promise.all([page.waitForEvent('download'), page.click('text=Download data')])
      t.equal(await readFile((await data.path())!, 'utf8'), good.data, 'the data file is the listed data')
      const [man] = await Promise.all([page.waitForEvent('download'), page.click('text=Download manifest')])
      t.same(
        JSON.parse(await readFile((await man.path())!, 'utf8')),
        good.manifest,
        'the manifest is the listed manifest',
      )
      const tx = ((await page.locator('#buy-result .receipt code').textContent()) ?? '') as `0x${string}`
      t.match(tx, /^0x[0-9a-f]{64}$/, 'the page shows the receipt: the payment transaction')
      await page.reload()
      t.match(await page.locator('#buy-h + p').textContent(), 'You bought this dataset (receipt).')
      t.equal(await page.locator('.downloads a').count(), 2)
      // My purchases lists it with the transaction hash, the block it was mined in and the price.
      const rcpt = await pub.getTransactionReceipt({ hash: tx })
      await page.click('text=receipt')
      await page.waitForURL(`${url}/purchases`)
      const row = page.locator(`tr[data-tx="${tx}"]`)
      t.equal(await row.count(), 1, 'the purchase is listed by its transaction hash')
      t.equal(await row.locator('code').getAttribute('title'), tx)
      t.match(await row.textContent(), 'Attested vends, all rows')
      t.match(await row.textContent(), `${rcpt.blockNumber}`)
      t.match(await row.textContent(), '0.05 MON')
      t.equal(rcpt.from.toLowerCase(), buyer.address.toLowerCase(), 'paid by the buyer')
      await shot(page, 'purchases')
    },
  )

  t.test('a wallet on another chain is told which chain to switch to, and can switch', async (t) => {
    const { page, wallet } = await open(t, 'wrong-network', anvilAccount(8).privateKey, { chainId: 1 })
    await page.goto(`${url}/marketplace`)
    await page.click('#sign-in')
    t.match(
      await text(page, '#session-status', 'chain 1'),
      'Your wallet is on chain 1; switch to chain 10143.',
    )
    t.notOk(wallet!.calls.includes('personal_sign'), 'nothing was signed on the wrong chain')
    await shot(page, 'wrong-network')
    await page.click('text=Switch wallet to chain 10143')
    t.match(
      await text(page, '#session-status', 'now on chain'),
      'Your wallet is now on chain 10143. Try again.',
    )
    await Promise.all([page.waitForEvent('load'), page.click('#sign-in')])
    t.match(await text(page, '.who', 'Signed in as'), 'Signed in as')
    // Signed in, then the wallet moves to another chain: Buy stops before paying.
    wallet!.behaviour.chainId = 1
    await page.goto(`${url}/marketplace/${mixedSlug}`)
    // The mixed listing failed its last verification (the verify test above): Buy needs the tick.
    await page.check('#accept-unverified')
    await page.click('#buy-button')
    t.match(await text(page, '#buy-status', 'chain 1'), 'Your wallet is on chain 1; switch to chain 10143.')
    t.notOk(wallet!.calls.includes('eth_sendTransaction'), 'no payment was sent from the wrong chain')
    await Promise.all([page.waitForEvent('load'), page.click('#sign-out')])
    t.ok(await page.locator('#sign-in').isVisible(), 'signed out: the sign-in button is back')
    t.equal(await page.evaluate(async () => (await fetch('/api/auth/session')).status), 401)
  })

  t.test(
    'a rejected signature is a clear message; a rejected unlock keeps the payment for the retry',
    async (t) => {
      const buyer2 = anvilAccount(6)
      const { page, wallet } = await open(t, 'rejected', buyer2.privateKey, { rejectSign: () => true })
      await page.goto(`${url}/marketplace/${mixedSlug}`)
      await page.click('#sign-in')
      t.equal(
        (await text(page, '#session-status', 'rejected')).trim(),
        'You rejected the request in your wallet; nothing was signed or sent.',
      )
      const session = await page.evaluate(async () => (await fetch('/api/auth/session')).status)
      t.equal(session, 401, 'not signed in')
      await shot(page, 'rejected-sign-in')
      // Sign-in is accepted, the unlock message is rejected after the payment went out.
      wallet!.behaviour.rejectSign = (m) => m.includes('\nUnlock\n')
      await page.check('#accept-unverified')
      await page.click('#buy-button')
      const msg = await text(page, '#buy-status', 'rejected')
      t.match(msg, 'You rejected the request in your wallet; nothing was signed or sent.')
      t.match(
        msg,
        /Your payment 0x[0-9a-f]{64} is kept: press Buy again to unlock with it; you will not pay twice\./,
      )
      t.equal(wallet!.calls.filter((c) => c === 'eth_sendTransaction').length, 1)
      wallet!.behaviour.rejectSign = () => false
      await page.click('#buy-button')
      t.match(await text(page, '#buy-status', 'Unlocked'), 'Unlocked.')
      t.equal(
        wallet!.calls.filter((c) => c === 'eth_sendTransaction').length,
        1,
        'the retry reused the payment: paid once',
      )
      const file = await page.evaluate(
        async (slug) => (await fetch(`/api/marketplace/listings/${slug}/file?part=data`)).text(),
        mixedSlug,
      )
      t.equal(file, mixed.data, 'the buyer can download the data')
      // A rejected key challenge: no key is issued or shown.
      wallet!.behaviour.rejectSign = (m) => m.includes('\nIssue agent key\n')
      await page.goto(`${url}/keys`)
      await page.fill('#agent-id', dev.agentId)
      await page.click('#issue-button')
      t.equal(
        (await text(page, '#issue-status', 'rejected')).trim(),
        'You rejected the request in your wallet; nothing was signed or sent.',
      )
      t.ok(await page.locator('#new-key').isHidden(), 'no key is shown')
      t.equal(await page.locator('#key-rows tr').first().textContent(), 'No keys yet.')
      // The same API check from outside the browser: a stranger may not.
      const stranger = await signIn(url, anvilAccount(7).privateKey)
      t.equal(
        (await api(url, `/api/marketplace/listings/${mixedSlug}/file?part=data`, { cookie: stranger }))
          .status,
        403,
      )
    },
  )

  t.test('the Preview section shows the fields and sample lines of a listing made by the hub', async (t) => {
    const { page } = await open(t, 'preview')
    await page.goto(`${url}/marketplace/${hubSlug}`)
    const fields = await page.locator('#preview table.fields tbody td:first-child code').allTextContents()
    t.same(fields.sort(), ['action', 'board', 'n', 'slot'], 'the fields of the attested lines')
    t.match(await page.locator('#preview .preview-facts').textContent(), '4 lines · 4 fields')
    t.same(
      await page
        .locator('#preview table.hist tbody tr')
        .allTextContents()
        .then((r) => r.map((x) => x.replace(/\s+/g, ' ').trim())),
      ['vend.dispense 4'],
      'the action histogram',
    )
    const samples = await page.locator('#preview .sample-line pre').allTextContents()
    t.equal(samples.length, 2, 'svc listing create --preview 2 published two lines')
    const data = await readFile(`${hubMade.dir}/operations.jsonl`, 'utf8')
    t.same(samples, data.split('\n').slice(0, 2), 'the first two lines of the data file, as listed')
    t.match(await page.locator('#sample-verdict-0').textContent(), 'Not checked yet')
    await page.click('#verify-button')
    await text(page, '#verify-status', 'Not verified')
    // The fixture's lines were never attested on this chain: each sample says so for itself.
    t.match(await page.locator('#sample-verdict-0').textContent(), /^Failed just now: requestHash: unknown/)
    await shot(page, 'listing-preview')
  })

  t.test('badges on the cards and at the top of the listing page match the verify route', async (t) => {
    const { page } = await open(t, 'badges')
    for (const slug of [goodSlug, mixedSlug]) {
      const v = await api(url, `/api/marketplace/listings/${slug}/verify`, { method: 'POST' })
      const view = await api(url, `/api/marketplace/listings/${slug}`)
      const want = v.json.verified ? 'verified' : 'verification failed'
      const block = (view.json.verification as { block: string }).block
      await page.goto(`${url}/marketplace/${slug}`)
      t.equal(
        await page.locator('.listing-head p.verification .tag').textContent(),
        want,
        `${slug}: listing badge`,
      )
      t.match(await page.locator('.listing-head p.verification').textContent(), `block ${block}`)
      await page.goto(`${url}/marketplace`)
      const card = page.locator('.card').filter({ has: page.locator(`a[href="/marketplace/${slug}"]`) })
      t.equal(await card.locator('.card-top .tag').textContent(), want, `${slug}: card badge`)
    }
    // Verify and Buy sit above the fold on a phone, before the facts and the preview.
    await page.setViewportSize({ width: PHONE, height: 844 })
    await page.goto(`${url}/marketplace/${goodSlug}`)
    for (const id of ['#verify-button', '#buy-button']) {
      const box = await page.locator(id).boundingBox()
      t.ok(
        box && box.y + box.height <= 844,
        `${id} is above the fold at 390×844 (bottom ${box && Math.round(box.y + box.height)})`,
      )
    }
    t.equal(await page.locator('img.cover').count(), 1, 'the seller sent a cover: shown')
    await page.goto(`${url}/marketplace/${mixedSlug}`)
    t.equal(await page.locator('img.cover, .cover').count(), 0, 'no cover sent: no placeholder')
    t.match(
      await page.locator('.listing-head p.verification').getAttribute('class'),
      'failed',
      'a failed listing is marked',
    )
  })

  t.test('every page fits the viewport at 1366 and 390 px, with touch targets of 44 px', async (t) => {
    const { page } = await open(t, 'widths', dev.accounts.buyer.privateKey)
    await page.goto(`${url}/marketplace`)
    await Promise.all([page.waitForEvent('load'), page.click('#sign-in')])
    const pages: [string, string][] = [
      ['browse', '/marketplace'],
      ['listing-verified', `/marketplace/${goodSlug}`],
      ['listing-failed', `/marketplace/${mixedSlug}`],
      ['listing-hub', `/marketplace/${hubSlug}`],
      ['listing-sample', '/marketplace/sample-vending-sales'],
      ['agent', `/agents/${dev.agentId}`],
      ['keys-signed-in', '/keys'],
      ['purchases-signed-in', '/purchases'],
      ['licenses', '/licenses'],
      ['license-research', '/licenses/research'],
      ['api-docs', '/api/docs'],
      ['guide-local-chain', '/guide/local-chain'],
      ['not-found', '/agents/999'],
    ]
    for (const w of WIDTHS) {
      await page.setViewportSize({ width: w, height: w === PHONE ? 844 : 900 })
      for (const [name, path] of pages) {
        await page.goto(url + path)
        if (path.startsWith('/marketplace/')) {
          // After Verify, the widest state: the rows tables.
          await page.click('#verify-button')
          await page.locator('#verify-result table').first().waitFor()
        }
        const f = await widths(page)
        t.ok(
          f.doc <= f.view,
          `${path} at ${w} px: document ${f.doc} px ≤ viewport ${f.view} px ${f.out.join(', ')}`,
        )
        t.same(await smallTargets(page), [], `${path} at ${w} px: touch targets ≥ 44 px`)
        if (wantScreenshots()) await screenshot(page, `page-${name}-${w}`)
      }
      await page.goto(`${url}/marketplace`)
      t.equal(
        await page.locator('details.more').evaluate((d: HTMLDetailsElement) => d.open),
        w !== PHONE,
        `the filters are ${w === PHONE ? 'folded on a phone' : 'open on a wide screen'}`,
      )
    }
    // Signed out: the keys and purchases pages explain and offer sign-in; they fit too.
    await ctx.clearCookies()
    for (const w of WIDTHS) {
      await page.setViewportSize({ width: w, height: w === PHONE ? 844 : 900 })
      for (const [name, path] of [
        ['keys-signed-out', '/keys'],
        ['purchases-signed-out', '/purchases'],
      ] as const) {
        await page.goto(url + path)
        const f = await widths(page)
        t.ok(
          f.doc <= f.view,
          `${path} signed out at ${w} px: document ${f.doc} px ≤ viewport ${f.view} px ${f.out.join(', ')}`,
        )
        if (wantScreenshots()) await screenshot(page, `page-${name}-${w}`)
      }
    }
  })
}
