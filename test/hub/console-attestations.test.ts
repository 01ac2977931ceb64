// The console's Attestations page on a real hub: lines stored by a SOP's chain_attest step, by
// state, with the same figures as `svc attest status --json` against the same hub; failed lines
// with their reasons; "sync now" refused clearly without [chain] and when forged; and, with a
// real anvil chain and a real attestor, "sync now" attests the waiting lines.
import t from 'tap'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { AttestStore } from '../../hub/attest/store.ts'
import { svcCli } from '../helpers/cli.ts'
import { type Teardown, tempDir } from '../helpers/tmp.ts'
import { waitFor } from '../helpers/wait.ts'
import { ConsoleClient, startConsoleHub } from './console-helpers.ts'
import { SALE_SOP } from './console-pages-fixtures.ts'
import { startDevAttestor } from '../helpers/dev-attestor.ts'

async function signedIn(t: Teardown, toml?: string, home?: string) {
  let store: AttestStore | undefined
  const ch = await startConsoleHub(t, {
    sops: { sale: SALE_SOP },
    ...(toml ? { toml } : {}),
    ...(home ? { home } : {}),
    parts: (real) => ({
      localApi: real.localApi!,
      attestation: async (o) => {
        const a = await real.attestation!(o)
        store = a.console?.store
        return a
      },
    }),
  })
  if (!store) throw new Error('no attestation store')
  const c = new ConsoleClient(ch.url)
  const res = await c.signInWithLink(ch.hub.console!.loginLink())
  if (res.status !== 200) throw new Error(`sign-in failed: ${res.status}`)
  const sell = async (n: number) => {
    const d = await ch.hub.engine.trigger('sale', {
      type: 'manual',
      source: 'test',
      payload: { n },
      at: Date.now(),
    })
    await waitFor(async () => (await ch.hub.engine.getRun(d.runId!))?.state === 'completed', `sale ${n} done`)
  }
  return { ...ch, c, store, csrf: await c.csrf(), sell }
}

/** `svc attest status --json`, the real CLI, against the running hub. */
async function cliStatus(env: NodeJS.ProcessEnv, home: string): Promise<Record<string, unknown>> {
  const r = await svcCli(env, home)('attest', 'status', '--json')
  if (r.code !== 0) throw new Error(`svc attest status: ${r.err}`)
  return JSON.parse(r.out) as Record<string, unknown>
}

const figure = (page: string, k: string): number => {
  const m = new RegExp(`<strong data-figure="${k}">(\\d+)</strong>`).exec(page)
  if (!m) throw new Error(`no ${k} figure on the page`)
  return Number(m[1])
}

t.test('lines by state as svc attest status counts them; failed lines with reasons', async (t) => {
  const ch = await signedIn(t)
  for (const n of [1, 2, 3]) await ch.sell(n)
  const [, second] = [await ch.store.get(0), await ch.store.get(1)]
  await ch.store.update([{ ...second!, state: 'failed', error: 'request hash taken by <another> request' }])

  const res = await ch.c.get('/attestations')
  t.equal(res.status, 200)
  const page = await res.text()
  const cli = await cliStatus(ch.env, ch.home)
  t.match(cli, { total: 3, pending: 2, failed: 1, sync: null }, 'the CLI, through the hub')
  for (const k of ['pending', 'sending', 'requested', 'attested', 'failed'])
    t.equal(figure(page, k), cli[k], `${k}: the page and svc attest status agree`)
  t.match(page, /<span data-count="total">3<\/span>/)
  t.match(
    page,
    /<tr data-line="2" data-state="failed"><td>2<\/td><td><code>vend<\/code><\/td><td><span class="tag s-failed">failed<\/span><\/td><td class="error">request hash taken by &lt;another&gt; request<\/td>/,
    'the failed line, numbered from 1 as svc attest export, with its reason escaped',
  )
  const waitingPart = page.slice(page.indexOf('Waiting to be attested'), page.indexOf('<h2>Failed'))
  t.same(
    [...waitingPart.matchAll(/data-line="(\d+)"/g)].map((m) => Number(m[1])),
    [1, 3],
    'the waiting lines, oldest first',
  )
  t.match(page, /data-sync-state="off"/, 'no [chain]: says lines wait for svc attest sync')
  t.notMatch(page, /action="\/attestations\/sync"/, 'and offers no sync button')

  const before = JSON.stringify(ch.store.counts())
  const refused = await ch.c.post('/attestations/sync', { _csrf: ch.csrf })
  t.equal(refused.status, 409)
  t.match(await refused.text(), /no \[chain\] sync settings on this hub[^<]*; nothing was sent/)
  const forged = await ch.c.post('/attestations/sync', { _csrf: 'nope' })
  t.equal(forged.status, 403)
  t.equal(JSON.stringify(ch.store.counts()), before, 'nothing changed')
})

t.test('a hub that does not attest: the Attestations page says so, sync now is refused', async (t) => {
  const ch = await startConsoleHub(t)
  const c = new ConsoleClient(ch.url)
  await c.signInWithLink(ch.hub.console!.loginLink())
  const csrf = await c.csrf()
  const page = await c.get('/attestations')
  t.equal(page.status, 200)
  t.match(await page.text(), /This hub does not attest: no SOP calls <code>chain_attest<\/code>/)
  const sync = await c.post('/attestations/sync', { _csrf: csrf })
  t.equal(sync.status, 404)
  t.match(await sync.text(), /this hub does not attest[^<]*; nothing was sent/)
})

t.test('sync now, against a real chain and attestor, attests the waiting lines', async (t) => {
  const { chain: dev, attestor } = await startDevAttestor(t)
  // The dev chain's enrolled device key is the hub's (as `svc chain dev` leaves it).
  const home = await tempDir(t)
  await writeFile(join(home, 'device.key'), `${dev.accounts.device.privateKey}\n`, { mode: 0o600 })
  const ch = await signedIn(
    t,
    `[console]\nport = 0\n[chain]\nrpc_url = "${dev.rpcUrl}"\nvalidation_registry = "${dev.validationRegistry}"\nagent_id = ${dev.agentId}\nattestor_address = "${dev.info.attestorAddress}"\nattestor_url = "${attestor.url}"\n`,
    home,
  )
  for (const n of [1, 2]) await ch.sell(n)
  const before = await (await ch.c.get('/attestations')).text()
  t.match(before, /<form method="post" action="\/attestations\/sync"/, 'a sync button')
  t.match(before, /<input type="hidden" name="_csrf"/)

  const res = await ch.c.post('/attestations/sync', { _csrf: ch.csrf })
  t.equal(res.status, 303)
  t.equal(res.headers.get('location'), '/attestations')
  await waitFor(() => ch.store.counts().attested === 2, 'both lines attested', {
    timeoutMs: 60_000,
    intervalMs: 100,
  }).catch(async (e) => {
    const p = await (await ch.c.get('/attestations')).text()
    t.comment(
      p.slice(p.indexOf('<h2 id="sync-h">'), p.indexOf('<h2 id="sync-h">') + 3000),
      JSON.stringify(ch.store.counts()),
    )
    throw e
  })
  const page = await waitFor(async () => {
    const p = await (await ch.c.get('/attestations')).text()
    return p.includes('data-sync-now="done"') && p
  }, 'the sync now outcome on the page')
  t.equal(figure(page, 'attested'), 2)
  t.equal(figure(page, 'pending'), 0)
  t.match(page, /No line waits/)
  t.match(await cliStatus(ch.env, ch.home), { attested: 2, pending: 0, sync: { state: 'idle' } })
})
