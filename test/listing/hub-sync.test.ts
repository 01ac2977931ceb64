// The hub's own listing sync (automatic in the hub): a real hub (realParts)
// with a [chain] section posts a queued listing to a real market by itself, and builds a draft
// queued by `svc listing create` while it held the attestation store.
import { cp } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { startDevChain } from '../../chain/dev.ts'
import { main } from '../../cli/main.ts'
import type { CliIo } from '../../cli/io.ts'
import { resolveConfig } from '../../hub/daemon/config.ts'
import { startHub } from '../../hub/daemon/hub.ts'
import { silentLog } from '../../hub/log.ts'
import { realParts } from '../../hub/daemon/real-parts.ts'
import { createListing } from '../../hub/listing/create.ts'
import { issueMarketKey } from '../../hub/listing/issue-key.ts'
import { saveKey } from '../../hub/listing/market-key.ts'
import { listingsDir, loadAll } from '../../hub/listing/queue.ts'
import { buildMarketApp } from '../../market/app.ts'
import { chainFromInfo, defaultConfig } from '../../market/config.ts'
import { tempDir } from '../helpers/tmp.ts'
import { waitFor } from '../helpers/wait.ts'
import { FIELDS, storeWith } from './fixtures.ts'

t.test('the hub posts queued listings and builds drafts by itself', async (t) => {
  const dev = await startDevChain()
  t.teardown(() => dev.stop())
  const mdir = await tempDir(t, 'svc-market-')
  const mc = chainFromInfo({ ...defaultConfig(join(mdir, 'data')), samples: false }, dev.info)
  if (!mc.ok) throw new Error(mc.error)
  const market = await buildMarketApp({ config: mc.config })
  t.teardown(() => market.close())
  const marketUrl = await market.app.listen({ host: '127.0.0.1', port: 0 })

  const home = await tempDir(t, 'svc-hub-home-')
  const env = { ...process.env, SVC_HOME: home }
  const key = await issueMarketKey(marketUrl, dev.accounts.owner.privateKey, dev.agentId)
  if (!key.ok) throw new Error(key.error)
  await saveKey(env, key.key, marketUrl)

  // A listing built elsewhere (from another store) and queued here, as if made while offline.
  const fx = await storeWith(t, ['attested', 'attested'])
  const made = await createListing({
    home: fx.home,
    fields: FIELDS,
    range: {},
    market: marketUrl,
    store: fx.store,
    agentId: dev.agentId,
  })
  if (!made.ok) throw new Error(made.error)
  await cp(made.dir, join(listingsDir(home), made.entry.id), { recursive: true })

  const cfg = resolveConfig(
    {
      hub: { sops_dir: join(home, 'sops'), data_dir: join(home, 'data'), log_level: 'silent' },
      broker: { port: 0 },
      api: { port: 0 },
      console: { port: 0 },
      webhook: { enabled: false },
      chain: {
        rpc_url: dev.rpcUrl,
        validation_registry: dev.validationRegistry,
        agent_id: dev.agentId,
        attestor_address: dev.info.attestorAddress,
        attestor_url: marketUrl,
      },
    },
    null,
    env,
  )
  if (!cfg.ok) throw new Error(cfg.error)
  const hub = await startHub(cfg.config, silentLog, realParts(env))
  t.teardown(() => hub.close())

  // The hub's listing loop runs every 5 s: a minute's safety net, read four times a second.
  const hubLoop = { timeoutMs: 60_000, intervalMs: 250 }
  await waitFor(
    async () => (await loadAll(home)).some((l) => l.ok && l.entry.state === 'posted'),
    'the queued listing to be posted',
    hubLoop,
  )
  const [posted] = await loadAll(home)
  t.match(
    posted,
    { ok: true, entry: { state: 'posted', url: new RegExp(`^${marketUrl}/marketplace/`) } },
    'posted by the hub, absolute URL',
  )

  // While the hub holds the store, `svc listing create` queues a draft; the hub builds it. Its
  // store is empty, so the build is refused, and the refusal is kept for `svc listing status`.
  const out: string[] = []
  const io: CliIo = { out: (s) => void out.push(s), err: (s) => void out.push(s), env, cwd: home }
  const code = await main(
    [
      'listing',
      'create',
      '--title',
      'Draft',
      '--summary',
      's',
      '--description',
      FIELDS.description,
      '--machine-type',
      'vending',
      '--license',
      'research',
      '--price',
      '1',
    ],
    io,
  )
  t.equal(code, 0, out.join('\n'))
  t.match(out.join('\n'), /as a draft/)
  await waitFor(
    async () =>
      (await loadAll(home)).some(
        (l) => l.ok && l.entry.fields.title === 'Draft' && l.entry.state !== 'draft',
      ),
    'the hub to build the draft',
    hubLoop,
  )
  const draft = (await loadAll(home)).find((l) => l.ok && l.entry.fields.title === 'Draft')
  t.match(
    draft,
    { ok: true, entry: { state: 'failed', lastError: 'no attested lines in the range: nothing to list' } },
    'built by the hub with the same checks',
  )

  // The hub holds the attestation store; `svc attest status` asks it over the local API.
  out.length = 0
  t.equal(await main(['attest', 'status', '--json'], io), 0, out.join('\n'))
  t.match(JSON.parse(out[0]!), { total: 0, attested: 0 }, 'status through the running hub')
})
