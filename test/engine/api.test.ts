// The local API and the CLI commands that use it: a real engine, a real
// Fastify server on a loopback port, a real token file (0600), the CLI through its entry.
import { chmod, readFile, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import {
  createLocalApi,
  issueApiToken,
  readApiInfo,
  readApiToken,
  writeApiInfo,
} from '../../hub/api/index.ts'
import { svcCli } from '../helpers/cli.ts'
import type { SopBacklog } from '../../sops/run/backlog.ts'
import { svcPaths } from '../../hub/paths.ts'
import { logLines } from '../helpers/log-lines.ts'
import { tempDir } from '../helpers/tmp.ts'
import { waitFor } from '../helpers/wait.ts'
import { call, sop, step } from './helpers.ts'
import { startEngine } from './engine-helpers.ts'

/** `svc sop <argv…>` with this environment. */
function cli(env: NodeJS.ProcessEnv) {
  const svc = svcCli(env)
  return (...argv: string[]) => svc('sop', ...argv)
}

async function hub(t: Parameters<typeof startEngine>[0]) {
  const home = await tempDir(t, 'svc-home-')
  const env = { ...process.env, SVC_HOME: home, USER: 'tester' }
  const paths = svcPaths(env)
  const steps = [
    step(1, { requiresConfirmation: true, prompt: 'open the door?', calls: [call('echo', { a: 1 })] }),
    step(2, { decide: 'is it raining?', calls: [call('echo', { b: 2 })] }),
  ]
  // coin: one run at a time, later coins held (sops/RUNTIME.md, "Admission policies").
  const coin = sop({ name: 'coin', admissionPolicy: 'hold', steps: [step(1, { calls: [call('block')] })] })
  const { engine, tools } = await startEngine(t, [sop({ name: 'door', executionMode: 'auto', steps }), coin])
  const token = await issueApiToken(paths.apiToken)
  const app = createLocalApi({ engine, token })
  const url = await app.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => app.close())
  await writeApiInfo(url, paths.apiInfo)
  return { engine, tools, env, paths, token, url, run: cli(env) }
}

t.test('token and info files: 0600, fresh per issue, refused when others can read them', async (t) => {
  const dir = await tempDir(t)
  const p = join(dir, 'sub', 'hub.token')
  const a = await issueApiToken(p)
  t.equal((await stat(p)).mode & 0o777, 0o600)
  t.same(await readApiToken(p), { ok: true, value: a })
  const b = await issueApiToken(p)
  t.not(a, b)
  await chmod(p, 0o644)
  t.match(await readApiToken(p), { ok: false, code: 'BAD_CONFIG', error: /readable by others \(mode 644\)/ })
  await chmod(p, 0o600)
  await writeFile(p, 'nope', { mode: 0o600 })
  t.match(await readApiToken(p), { ok: false, error: /does not hold a token/ })
  t.match(await readApiToken(join(dir, 'missing')), {
    ok: false,
    code: 'UNAVAILABLE',
    error: /no hub is running/,
  })
  const info = join(dir, 'info.json')
  await writeApiInfo('http://127.0.0.1:5555', info)
  t.same(await readApiInfo(info), { ok: true, value: { url: 'http://127.0.0.1:5555', pid: process.pid } })
  await writeFile(info, JSON.stringify({ url: 'http://evil.example:80' }))
  t.match(await readApiInfo(info), { ok: false, error: /loopback/ })
})

t.test('every route needs the bearer token; errors are JSON { error, code }', async (t) => {
  const h = await hub(t)
  for (const [method, path] of [
    ['GET', '/sop/pending'],
    ['GET', '/sop/runs'],
    ['POST', '/sop/runs/x/approve'],
    ['GET', '/nothing'],
  ] as const) {
    const none = await fetch(h.url + path, { method })
    t.equal(none.status, 401, `${method} ${path} without a token`)
    t.match(await none.json(), { error: /missing bearer token/, code: 'UNAUTHORIZED' })
    const bad = await fetch(h.url + path, { method, headers: { authorization: 'Bearer ' + 'f'.repeat(64) } })
    t.equal(bad.status, 401)
  }
  const auth = { authorization: `Bearer ${h.token}`, 'content-type': 'application/json' }
  const r404 = await fetch(h.url + '/sop/runs/nope', { headers: auth })
  t.equal(r404.status, 404)
  t.same(await r404.json(), { error: 'no run with id "nope"', code: 'RUN_NOT_FOUND' })
  const noRoute = await fetch(h.url + '/nothing', { headers: auth })
  t.equal(noRoute.status, 404)
  t.same(await noRoute.json(), { error: 'no route GET /nothing', code: 'NOT_FOUND' })
  const extra = await fetch(h.url + '/sop/runs/x/approve', {
    method: 'POST',
    headers: auth,
    body: JSON.stringify({ bogus: 1 }),
  })
  t.equal(extra.status, 400)
  t.match(await extra.json(), { error: /additional properties: "bogus"/, code: 'BAD_INPUT' })
  const badState = await fetch(h.url + '/sop/runs?state=sleeping', { headers: auth })
  t.equal(badState.status, 400)
  t.match(await badState.json(), { error: /state.*waiting_approval/ })
  const notJson = await fetch(h.url + '/sop/door/trigger', {
    method: 'POST',
    headers: auth,
    body: '{not json',
  })
  t.equal(notJson.status, 400)
  const unknown = await fetch(h.url + '/sop/nope/trigger', { method: 'POST', headers: auth, body: '{}' })
  t.equal(unknown.status, 404)
  t.same(await unknown.json(), { error: 'no SOP named "nope" is loaded', code: 'SOP_NOT_LOADED' })
})

t.test("approve and deny: the status comes from the refusal's code", async (t) => {
  const h = await hub(t)
  const auth = { authorization: `Bearer ${h.token}`, 'content-type': 'application/json' }
  const post = async (path: string, body: unknown = {}) => {
    const r = await fetch(h.url + path, { method: 'POST', headers: auth, body: JSON.stringify(body) })
    return { status: r.status, body: (await r.json()) as Record<string, unknown> }
  }
  t.same(await post('/sop/runs/nope/approve'), {
    status: 404,
    body: { error: 'no run with id "nope"', code: 'RUN_NOT_FOUND' },
  })
  t.same(await post('/sop/runs/nope/deny'), {
    status: 404,
    body: { error: 'no run with id "nope"', code: 'RUN_NOT_FOUND' },
  })
  const { runId } = (await post('/sop/door/trigger', { payload: {} })).body as { runId: string }
  await h.engine.idle()
  // A question left unanswered is bad input, not a conflict with the run's state.
  const unanswered = await post(`/sop/runs/${runId}/approve`)
  t.equal(unanswered.status, 400)
  t.match(unanswered.body, { error: /needs an answer to step 2's question/, code: 'DECISION_MISSING' })
  t.equal((await post(`/sop/runs/${runId}/deny`)).status, 200)
  await h.engine.idle()
  const again = await post(`/sop/runs/${runId}/deny`)
  t.equal(again.status, 409)
  t.match(again.body, { error: /is not waiting for approval \(it is cancelled\)/, code: 'RUN_NOT_WAITING' })
  // The engine's own refusal of a missing id (the route's schema already refuses an empty one).
  t.match(await h.engine.approve(''), { ok: false, code: 'BAD_INPUT', error: 'run id is missing' })
})

t.test("a failure of the local API is a 500 { error, code } in the hub's log with the error", async (t) => {
  const { engine } = await startEngine(t, [])
  const { log, lines } = logLines()
  const app = createLocalApi({ engine, token: 'f'.repeat(64), log })
  // The hub adds its own routes to this app (status, boards, backup…): one that throws.
  app.get('/hub/boom', async () => {
    throw new Error('the store is closed')
  })
  t.teardown(() => app.close())
  const r = await app.inject({
    method: 'GET',
    url: '/hub/boom',
    headers: { authorization: `Bearer ${'f'.repeat(64)}` },
  })
  t.equal(r.statusCode, 500)
  t.same(r.json(), { error: 'internal error', code: 'INTERNAL' })
  t.match(lines, [
    {
      level: 50,
      status: 500,
      url: '/hub/boom',
      err: { message: 'the store is closed', stack: /api\.test\.ts/ },
    },
  ])
})

t.test('svc sop pending / approve / deny / logs against the running hub', async (t) => {
  const h = await hub(t)
  const auth = { authorization: `Bearer ${h.token}`, 'content-type': 'application/json' }
  const started = (await (
    await fetch(h.url + '/sop/door/trigger', {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ payload: { rain: true } }),
    })
  ).json()) as { runId: string; outcome: string }
  t.equal(started.outcome, 'started')
  await h.engine.idle()

  const pending = await h.run('pending')
  t.equal(pending.code, 0)
  t.match(pending.out, new RegExp(`${started.runId}  door  waiting_approval  step 1`))
  t.match(pending.out, /prompt: open the door\?/)
  t.match(pending.out, /question for step 2: is it raining\? {2}\(answer with --decide 2=yes\|no\)/)
  const pj = JSON.parse((await h.run('pending', '--json')).out)
  t.equal(pj[0].id, started.runId)

  const noAnswer = await h.run('approve', started.runId)
  t.equal(noAnswer.code, 1)
  t.match(noAnswer.err, /^svc sop: run .* needs an answer to step 2's question/)
  t.equal(h.engine.pending().length, 1, 'a refused approval changes nothing')

  const ok = await h.run('approve', started.runId, '--decide', '2=yes', '--note', 'checked')
  t.equal(ok.code, 0, ok.err)
  t.match(ok.out, `approved run ${started.runId} (door): now running`)
  await h.engine.idle()
  const run = await h.engine.getRun(started.runId)
  t.equal(run?.state, 'completed')
  t.match(run?.approvals, [{ by: 'tester', note: 'checked', decision: 'approved' }])

  const logs = await h.run('logs', started.runId)
  t.equal(logs.code, 0)
  t.match(logs.out, /step 1 +info +approved by tester: checked/)
  t.match(logs.out, /run +info +completed/)
  t.match(JSON.parse((await h.run('logs', started.runId, '--json')).out), [{ step: 1 }])

  const again = await h.run('approve', started.runId)
  t.equal(again.code, 1)
  t.match(again.err, /not waiting for approval \(it is completed\)/)

  const second = (await (
    await fetch(h.url + '/sop/door/trigger', { method: 'POST', headers: auth, body: '{}' })
  ).json()) as { runId: string }
  await h.engine.idle()
  const denied = await h.run('deny', second.runId, '--note', 'storm')
  t.equal(denied.code, 0)
  t.match(denied.out, /denied run .*: now cancelled/)
  t.match((await h.engine.getRun(second.runId))?.error, /denied by tester before step 1: storm/)

  t.match((await h.run('logs', 'nope')).err, /no run with id "nope"/)
  t.equal((await h.run('approve')).code, 2)
  t.equal((await h.run('pending', '--bogus')).code, 2)
})

t.test('with no hub running the commands say so in one line (exit 1)', async (t) => {
  const home = await tempDir(t, 'svc-home-')
  const run = cli({ ...process.env, SVC_HOME: home })
  const r = await run('pending')
  t.equal(r.code, 1)
  t.match(r.err, /^svc sop: no hub is running \(no .*hub-api\.json\); start one with `svc hub run`\n$/)
  // A stale info file (the hub died) is reported the same way.
  const paths = svcPaths({ SVC_HOME: home })
  await issueApiToken(paths.apiToken)
  await writeApiInfo('http://127.0.0.1:1', paths.apiInfo)
  const stale = await run('logs', 'x')
  t.equal(stale.code, 1)
  t.match(stale.err, /no hub is running at http:\/\/127\.0\.0\.1:1/)
  t.equal((await readFile(paths.apiToken, 'utf8')).trim().length, 64)
})

t.test('GET /sop/runs pages by cursor and time; GET /sop/held counts the backlog', async (t) => {
  const h = await hub(t)
  const auth = { authorization: `Bearer ${h.token}`, 'content-type': 'application/json' }
  const get = async (path: string) => {
    const r = await fetch(h.url + path, { headers: auth })
    return {
      status: r.status,
      body: (await r.json()) as { runs: { id: string }[]; next: string | null; error?: string },
    }
  }
  const ids: string[] = []
  for (let i = 0; i < 5; i++) {
    const r = await fetch(h.url + '/sop/door/trigger', {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ payload: { i } }),
    })
    ids.push(((await r.json()) as { runId: string }).runId)
  }
  await h.engine.idle()
  const seen: string[] = []
  let page = await get('/sop/runs?sop=door&limit=2')
  for (;;) {
    t.equal(page.status, 200)
    seen.push(...page.body.runs.map((r) => r.id))
    if (page.body.next === null) break
    page = await get(`/sop/runs?sop=door&limit=2&cursor=${encodeURIComponent(page.body.next)}`)
  }
  // Runs created in the same millisecond order by id, so compare as sets, then check the order.
  t.same([...seen].sort(), [...ids].sort(), 'every run once across three pages')
  const created = await Promise.all(seen.map(async (id) => (await h.engine.getRun(id))!.createdAt))
  t.same(
    created,
    [...created].sort((a, b) => b - a),
    'newest first',
  )
  t.equal((await get('/sop/runs?state=waiting_approval&since=1h')).body.runs.length, 5)
  t.equal((await get('/sop/runs?since=2999-01-01')).body.runs.length, 0, 'nothing from the future')
  t.equal(
    (await get(`/sop/runs?until=${new Date(Date.now() - 3_600_000).toISOString()}`)).body.runs.length,
    0,
  )

  for (const [q, msg] of [
    ['cursor=nope', /cursor "nope" is not one this hub gave out/],
    ['since=yesterday', /since: "yesterday" is not a time/],
    ['until=2026-13-45', /until: "2026-13-45" is not a time/],
    ['state=sleeping', /state.*waiting_approval/],
    ['limit=0', /limit/],
  ] as const) {
    const r = await get(`/sop/runs?${q}`)
    t.equal(r.status, 400, q)
    t.match(r.body.error, msg)
  }

  t.same((await (await fetch(h.url + '/sop/held', { headers: auth })).json()).sops, [], 'no backlog yet')
  for (let i = 0; i < 3; i++)
    await fetch(h.url + '/sop/coin/trigger', {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ payload: { i } }),
    })
  const held = (await (await fetch(h.url + '/sop/held', { headers: auth })).json()) as {
    now: number
    sops: SopBacklog[]
  }
  t.match(
    held.sops,
    [{ sop: 'coin', count: 2, held: 2, deferred: 0 }],
    'two coins held behind the running one',
  )
  const b = held.sops[0]!
  t.ok(b.oldestAt <= b.newestAt && b.oldestAgeMs === held.now - b.oldestAt, 'arrivals and ages agree')
  // Drain: each release lets the running coin finish and the next held one start.
  await waitFor(async () => {
    h.tools.release()
    const now = (await (await fetch(h.url + '/sop/held', { headers: auth })).json()) as { sops: unknown[] }
    return (
      now.sops.length === 0 &&
      h.tools.blockedCount() === 0 &&
      h.engine.liveRuns().every((r) => r.sop !== 'coin')
    )
  }, 'the held coins to drain')
  await h.engine.idle()
  t.equal((await get('/sop/runs?sop=coin&state=completed')).body.runs.length, 3, 'all three coins ran')
})
