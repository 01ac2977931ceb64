// `svc attest status|export` while the hub holds the store: they go through the hub's local API
// (real Fastify on loopback, real token and info files), and get the same answers.
import t from 'tap'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { signerFromKey } from '../../hub/attest/device-key.ts'
import { createStatusTracker } from '../../hub/attest/sync-status.ts'
import { attestRoutes } from '../../hub/attest/api.ts'
import { attestStorePath, openAttestStore } from '../../hub/attest/store.ts'
import { createLocalApi, issueApiToken, writeApiInfo } from '../../hub/api/index.ts'
import type { HubEngine } from '../../sops/hub-engine.ts'
import { main } from '../../cli/main.ts'
import { svcPaths } from '../../hub/paths.ts'
import { createChainAttestTool } from '../../tools/chain_attest.ts'
import { tempDir } from '../helpers/tmp.ts'

async function cli(args: string[], env: NodeJS.ProcessEnv, cwd: string) {
  const out: string[] = []
  const err: string[] = []
  const code = await main(args, { out: (s) => void out.push(s), err: (s) => void err.push(s), env, cwd })
  return { code, out: out.join('\n'), err: err.join('\n') }
}

t.test('status and export reach the store through the running hub', async (t) => {
  const home = await tempDir(t)
  const env = { ...process.env, SVC_HOME: home }
  const paths = svcPaths(env)
  const store = await openAttestStore(attestStorePath(paths.data))
  t.teardown(() => store.close())
  const tool = createChainAttestTool({
    store,
    signer: signerFromKey('0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a'),
  })
  for (let i = 0; i < 4; i++) {
    const r = await tool.run(
      { action: 'vend', request_uri: `svc://o/${i}`, params: { i } },
      {
        runId: 'r',
        sop: 's',
        step: 1,
        call: i,
        idempotencyKey: `k${i}`,
        signal: new AbortController().signal,
      },
    )
    t.ok(r.ok)
  }

  // No hub answering: the CLI says the store is held and no hub runs, rather than hanging or crashing.
  const none = await cli(['attest', 'status'], env, home)
  t.equal(none.code, 1)
  t.match(none.err, /no hub is running/)

  const token = await issueApiToken(paths.apiToken)
  // The local API needs no engine for these routes.
  const app = createLocalApi({ engine: {} as HubEngine, token })
  // The hub's sync reports through the same route: here, rate-limited until a fixed time.
  const tracker = createStatusTracker()
  const until = Date.now() + 3_600_000
  tracker.runStarted(4, Date.now())
  tracker.rateLimited(until, Date.now())
  attestRoutes(store, () => tracker.snapshot(Date.now()))(app)
  t.teardown(() => app.close())
  await writeApiInfo(await app.listen({ host: '127.0.0.1', port: 0 }), paths.apiInfo)

  const status = await cli(['attest', 'status', '--json'], env, home)
  t.equal(status.code, 0, status.err)
  const { sync, ...counts } = JSON.parse(status.out)
  t.same(counts, store.counts())
  t.equal(counts.total, 4)
  const waiting = `waiting: RPC rate-limited until ${new Date(until).toISOString().replace(/\.\d{3}Z$/, 'Z')}`
  t.match(sync, { state: 'waiting', line: waiting, progress: { done: 0, total: 4 } })
  const human = await cli(['attest', 'status'], env, home)
  t.match(human.out, `sync       ${waiting}`)
  t.match(human.out, /lines\s+4/)
  t.match(human.out, /pending\s+4/)

  const exp = await cli(['attest', 'export', '--out', 'ex', '--from', '2', '--to', '3', '--json'], env, home)
  t.equal(exp.code, 0, exp.err)
  t.match(JSON.parse(exp.out), { lines: 2, attested: 0, dataPath: join(home, 'ex', 'operations.jsonl') })
  const lines = (await readFile(join(home, 'ex', 'operations.jsonl'), 'utf8')).trim().split('\n')
  t.same(
    lines.map((l) => JSON.parse(l).params.i),
    [1, 2],
    'lines 2..3, relative --out resolved against the caller',
  )
  t.equal(
    await readFile(join(home, 'ex', 'operation-requests.txt'), 'utf8'),
    '\n\n',
    'blank request lines: not attested yet',
  )

  // Bad input to the route: named, and nothing written.
  const bad = await app.inject({
    method: 'POST',
    url: '/attest/export',
    headers: { authorization: `Bearer ${token}` },
    payload: { out: 'relative/dir' },
  })
  t.equal(bad.statusCode, 400)
  t.match(bad.json(), { error: /out must be an absolute path/ })
  const extra = await app.inject({
    method: 'POST',
    url: '/attest/export',
    headers: { authorization: `Bearer ${token}` },
    payload: { out: '/tmp/x', rm: true },
  })
  t.equal(extra.statusCode, 400)
  const order = await app.inject({
    method: 'POST',
    url: '/attest/export',
    headers: { authorization: `Bearer ${token}` },
    payload: { out: join(home, 'y'), from: 3, to: 1 },
  })
  t.match(order.json(), { error: /to must not be before from/ })
  const noAuth = await app.inject({ method: 'GET', url: '/attest/status' })
  t.equal(noAuth.statusCode, 401)
})
