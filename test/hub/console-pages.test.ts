// The console's pages on a real hub (engine, LevelDB, simulated board, embedded broker): the
// overview, approving and denying (and forged posts that change nothing), run history with
// filters and keyset pages, a run's page, unknown runs, and the live event stream.
import t from 'tap'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { waitFor } from '../helpers/wait.ts'
import { APPROVAL_SOP, ConsoleClient, openEvents, startConsoleHub, triggerRun } from './console-helpers.ts'

const TEXT_SOP: [string, string] = [
  '[sop]\nname = "echo"\ndescription = "Echo"\nexecution_mode = "deterministic"\nmax_concurrent = 64\nagent = "a"\n\n[[triggers]]\ntype = "manual"\n',
  '# echo\n\n## Steps\n\n1. **Wait a moment**\n   - call: {"tool":"wait","args":{"ms":1}}\n',
]

async function signedIn(url: string, link: string): Promise<ConsoleClient> {
  const c = new ConsoleClient(url)
  const r = await c.signInWithLink(link)
  if (r.status !== 200) throw new Error(`sign-in failed: ${r.status}`)
  return c
}

const runState = async (hub: Awaited<ReturnType<typeof startConsoleHub>>['hub'], id: string) =>
  (await hub.engine.getRun(id))?.state

t.test('approvals: listed with SOP, step, prompt, payload; approve and deny with a comment', async (t) => {
  const { hub, url } = await startConsoleHub(t, { sops: { dispense: APPROVAL_SOP } })
  const c = await signedIn(url, hub.console!.loginLink())
  const a = await triggerRun(hub, 'dispense', { slot: 'A1', amount: 2 })
  const b = await triggerRun(hub, 'dispense', { slot: 'B7', amount: 1 })
  await waitFor(() => hub.engine.pending().length === 2, 'two runs at the checkpoint')

  const page = await (await c.get('/approvals')).text()
  t.match(page, /2 runs wait, oldest first/)
  t.match(page, /step 2: Confirm with the operator · checkpoint/)
  t.match(page, /Coin received; dispense the item from the slot\?/)
  t.match(page, /&quot;slot&quot;: &quot;A1&quot;/, 'the trigger payload, escaped')
  t.match(page, new RegExp(`action="/approvals/${a}"`))

  const csrf = await c.csrf()
  // Forged: another origin, no Origin at all, no token, a wrong token. Each changes nothing.
  const forged = [
    await c.post(`/approvals/${a}`, { _csrf: csrf, decision: 'approve' }, { origin: 'http://evil.example' }),
    await c.post(`/approvals/${a}`, { _csrf: csrf, decision: 'approve' }, { origin: null }),
    await c.post(`/approvals/${a}`, { decision: 'approve' }),
    await c.post(`/approvals/${a}`, { _csrf: `${csrf.slice(0, -2)}xx`, decision: 'approve' }),
  ]
  for (const r of forged) {
    t.equal(r.status, 403)
    t.match(await r.text(), /nothing was changed/)
  }
  t.equal(await runState(hub, a), 'paused_checkpoint', 'the forged posts approved nothing')
  t.equal((await hub.engine.getRun(a))!.approvals.length, 0)

  // A body that is not JSON (or not a form at all): a clear 400/415, nothing changed.
  const raw = (type: string, body: string) =>
    fetch(`${url}/approvals/${a}`, {
      method: 'POST',
      headers: { 'content-type': type, origin: c.origin, cookie: c.cookie, 'x-csrf-token': csrf },
      body,
    })
  const notJson = await raw('application/json', '{"decision": approve')
  t.equal(notJson.status, 400)
  t.match(await notJson.text(), /not valid JSON/)
  const xml = await raw('application/xml', '<approve/>')
  t.equal(xml.status, 415)
  t.match(await xml.text(), /Unsupported Media Type/i)
  t.equal(await runState(hub, a), 'paused_checkpoint', 'bodies that are not JSON approved nothing')

  const bad = await c.post(`/approvals/${a}`, { _csrf: csrf, decision: 'maybe' })
  t.equal(bad.status, 400)
  t.match(await bad.text(), /decision: must be &quot;approve&quot; or &quot;deny&quot;/)
  const long = await c.post(`/approvals/${a}`, { _csrf: csrf, decision: 'approve', note: 'x'.repeat(1001) })
  t.equal(long.status, 400)
  t.equal(await runState(hub, a), 'paused_checkpoint')

  const ok = await c.post(`/approvals/${a}`, { _csrf: csrf, decision: 'approve', note: 'slot checked' })
  t.equal(ok.status, 303)
  t.equal(ok.headers.get('location'), `/approvals?done=approved&run=${a}`)
  await waitFor(async () => (await runState(hub, a)) === 'completed', 'the approved run to finish')
  const ra = (await hub.engine.getRun(a))!
  t.match(ra.approvals, [{ decision: 'approved', by: 'owner (console)', note: 'slot checked', step: 2 }])

  const denied = await c.post(`/approvals/${b}`, { _csrf: csrf, decision: 'deny', note: 'slot empty' })
  t.equal(denied.status, 303)
  t.equal(await runState(hub, b), 'cancelled')
  t.match((await hub.engine.getRun(b))!.approvals, [
    { decision: 'denied', by: 'owner (console)', note: 'slot empty' },
  ])

  const twice = await c.post(`/approvals/${b}`, { _csrf: csrf, decision: 'approve' })
  t.equal(twice.status, 409)
  t.match(await twice.text(), /is not waiting for approval \(it is cancelled\)/)
  const nobody = await c.post('/approvals/00000000-0000-4000-8000-000000000000', {
    _csrf: csrf,
    decision: 'approve',
  })
  t.equal(nobody.status, 404)
  t.match(await nobody.text(), /no run with id/)
  t.match(await (await c.get('/approvals')).text(), /Nothing waits for approval/)
})

t.test(
  'approvals: a question for the operator is answered on the card, or the approval is refused',
  async (t) => {
    const door: [string, string] = [
      '[sop]\nname = "door"\ndescription = "Open the door"\nexecution_mode = "auto"\nmax_concurrent = 8\nagent = "a"\n\n[[triggers]]\ntype = "manual"\n',
      '# door\n\n## Steps\n\n1. **Open**\n   - requires_confirmation: true\n   - prompt: open the door?\n   - call: {"tool":"wait","args":{"ms":1}}\n2. **Close again**\n   - decide: is it raining?\n   - call: {"tool":"wait","args":{"ms":1}}\n',
    ]
    const { hub, url } = await startConsoleHub(t, { sops: { door } })
    const c = await signedIn(url, hub.console!.loginLink())
    const id = await triggerRun(hub, 'door', {})
    await waitFor(() => hub.engine.pending().length === 1, 'the run at its gate')
    const page = await (await c.get('/approvals')).text()
    t.match(page, /Answer before approving/)
    t.match(page, /is it raining\?/)
    t.match(page, /name="q_2" value="yes"/)
    const csrf = await c.csrf()
    const unanswered = await c.post(`/approvals/${id}`, { _csrf: csrf, decision: 'approve' })
    t.equal(unanswered.status, 400)
    t.match(await unanswered.text(), /needs an answer to step 2&#39;s question/)
    const odd = await c.post(`/approvals/${id}`, { _csrf: csrf, decision: 'approve', q_2: 'perhaps' })
    t.equal(odd.status, 400)
    t.match(await odd.text(), /q_2: answer &quot;yes&quot; or &quot;no&quot;/)
    t.equal((await hub.engine.getRun(id))?.state, 'waiting_approval', 'still waiting')
    const ok = await c.post(`/approvals/${id}`, { _csrf: csrf, decision: 'approve', q_2: 'no' })
    t.equal(ok.status, 303)
    await waitFor(async () => (await hub.engine.getRun(id))?.state === 'completed', 'the run done')
    const run = (await hub.engine.getRun(id))!
    t.equal(run.decisions['2'], false, 'the answer recorded')
    t.match(run.decidedBy['2'], /owner \(console\)/)
  },
)

t.test(
  'runs: history by SOP and state, keyset pages, bad filters named; a run page; unknown run 404',
  async (t) => {
    // A 4.32 s age bound: retention looks every 1.08 s, so the oldest run is read soon; these runs
    // all fit the segment being written, which it never drops.
    const { hub, url } = await startConsoleHub(t, {
      sops: { dispense: APPROVAL_SOP, echo: TEXT_SOP },
      toml: '[console]\nport = 0\n[history]\nmax_age_days = 0.00005\nmax_mb = 256\n',
    })
    const c = await signedIn(url, hub.console!.loginLink())
    const ids: string[] = []
    for (let i = 0; i < 53; i++) ids.push(await triggerRun(hub, 'echo', `plain text ${i}`))
    const waiting = await triggerRun(hub, 'dispense', { slot: 'C3' })
    await waitFor(
      async () =>
        (await hub.engine.queryRuns({ sop: 'echo', state: 'completed', limit: 100 })).runs.length === 53,
      '53 echo runs',
    )
    // Parked at its checkpoint before the pages are read: under load it may still be running.
    await waitFor(
      async () => (await hub.engine.getRun(waiting))?.state === 'paused_checkpoint',
      'the dispense run to park',
    )

    const all = await (await c.get('/runs?sop=echo')).text()
    const rows = (s: string) => [...s.matchAll(/<tr data-run="([^"]+)"/g)].map((m) => m[1])
    const first = rows(all)
    t.equal(first.length, 50, 'a page of 50')
    const older = /href="(\/runs\?sop=echo&amp;cursor=[^"]+)" rel="next"/.exec(all)
    t.ok(older, 'an "Older runs" link carrying the cursor and the filter')
    const second = rows(await (await c.get(older![1]!.replaceAll('&amp;', '&'))).text())
    t.equal(second.length, 3, 'the rest on the second page')
    t.same(new Set([...first, ...second]), new Set(ids), 'every run once, no overlap')
    // Newest first by creation time; runs created in the same millisecond follow their ids.
    const created = await Promise.all(
      [...first, ...second].map(async (id) => (await hub.engine.getRun(id!))!.createdAt),
    )
    t.ok(
      created.every((at, i) => i === 0 || at <= created[i - 1]!),
      'newest first',
    )

    // Above the list: how far back the history reaches (the first run), its size, the bounds.
    const oldest = (await hub.engine.getRun(ids[0]!))!.createdAt
    await waitFor(() => hub.engine.history?.().oldestAt === oldest, 'a retention pass to read the oldest run')
    const iso = new Date(oldest).toISOString().replace(/\.\d{3}Z$/, 'Z')
    t.match(
      all.replace(/\n/g, ' ').slice(0, all.indexOf('id="runs-list"')),
      /<p class="muted" id="runs-history">History kept (\(no runs when|from <time)/,
      'the line is above the list',
    )
    t.match(
      await (await c.get('/runs')).text(),
      new RegExp(
        `<p class="muted" id="runs-history">History kept from <time datetime="${iso}" title="${iso}">[^<]+</time>: \\d+(\\.\\d)? KiB in 1 segment; finished runs are dropped after 4 s or past 256 MiB, whichever comes first\\.</p>`,
      ),
    )

    const parked = rows(await (await c.get('/runs?state=paused_checkpoint')).text())
    t.same(parked, [waiting])
    t.same(rows(await (await c.get('/runs?sop=echo&since=today')).text()).length, 50)
    t.same(rows(await (await c.get('/runs?sop=echo&until=2020-01-01')).text()), [])

    for (const [q, msg] of [
      ['state=exploded', /state: &quot;exploded&quot; is not one of pending/],
      ['since=yesterday-ish', /from: &quot;yesterday-ish&quot; is not a time/],
      ['cursor=garbage', /cursor &quot;garbage&quot; is not one this hub gave out/],
    ] as const) {
      const r = await c.get(`/runs?${q}`)
      t.equal(r.status, 400, q)
      t.match(await r.text(), msg, q)
    }

    // A run page: a payload that is not JSON is shown as the text it was.
    const run = await (await c.get(`/runs/${ids[5]}`)).text()
    t.match(run, /<pre data-payload>plain text 5<\/pre>/)
    t.match(run, /1\. Wait a moment <span class="tag s-completed">completed<\/span>/)
    t.match(run, /<pre data-output>/, 'the step output')
    t.match(run, /<p class="took">took \d+ ms<\/p>/, "the step's duration, from the engine's own times")
    t.match(run, /completed: Wait a moment/, 'the log')

    t.match(
      await (await c.get(`/runs/${waiting}`)).text(),
      /2\. Confirm with the operator <span class="tag s-waiting_approval">waits for approval<\/span>/,
      'the parked step says it waits',
    )
    const csrf = await c.csrf()
    await c.post(`/approvals/${waiting}`, { _csrf: csrf, decision: 'approve', note: 'looks <fine>' })
    await waitFor(async () => (await runState(hub, waiting)) === 'completed', 'approved run done')
    const done = await (await c.get(`/runs/${waiting}`)).text()
    t.match(done, /<strong>approved<\/strong> at step 2 \(checkpoint\) by owner \(console\)/)
    t.match(done, /looks &lt;fine&gt;/, 'the comment, escaped')
    t.match(done, /3\. Dispense <span class="tag s-completed">/)
    t.match(done, /&quot;slot&quot;: &quot;C3&quot;/)

    const missing = await c.get('/runs/00000000-0000-4000-8000-00000000abcd')
    t.equal(missing.status, 404)
    t.match(await missing.text(), /No run with id <code>00000000-0000-4000-8000-00000000abcd<\/code>/)
    const odd = await c.get(`/runs/${encodeURIComponent('<script>')}`)
    t.equal(odd.status, 404)
    t.notMatch(await odd.text(), /<script>/)
  },
)

t.test('overview: boards, approvals, held triggers, runs today, invalid SOPs', async (t) => {
  const home = (await import('../helpers/tmp.ts')).tempDir
  const dir = await home(t)
  // A SOP that does not load: named on the overview with file:line.
  await mkdir(join(dir, 'sops', 'broken'), { recursive: true })
  await writeFile(join(dir, 'sops', 'broken', 'SOP.toml'), '[sop]\nname = "broken"\n')
  await writeFile(join(dir, 'sops', 'broken', 'SOP.md'), '# broken\n')
  // One run at a time, the rest held: the second trigger waits in the backlog.
  const held: [string, string] = [
    APPROVAL_SOP[0].replace('max_concurrent = 8', 'max_concurrent = 1\nadmission_policy = "hold"'),
    APPROVAL_SOP[1],
  ]
  const { hub, url } = await startConsoleHub(t, { home: dir, sops: { dispense: held }, boards: ['vend1'] })
  const c = await signedIn(url, hub.console!.loginLink())
  await triggerRun(hub, 'dispense', { slot: 'A1' })
  await waitFor(() => hub.engine.pending().length === 1, 'a run waits')
  await hub.engine.trigger('dispense', {
    type: 'manual',
    source: 'test',
    payload: { slot: 'A2' },
    at: Date.now(),
  })
  await waitFor(() => hub.engine.keptTriggers().length === 1, 'a trigger held')
  await waitFor(
    async () => /vend1 <span class="state-online"/.test(await (await c.get('/')).text()),
    'vend1 online',
  )
  const page = await (await c.get('/')).text()
  t.match(page, /<span class="figure" data-count="approvals">1<\/span> run waits/)
  t.match(page, /href="\/approvals">Review approvals/)
  t.match(page, /data-count="kept">1<\/span> kept/)
  t.match(
    page,
    /<td><a href="\/runs\?sop=dispense">dispense<\/a><\/td><td>1<\/td><td>0<\/td>/,
    'held per SOP',
  )
  t.match(page, /s-paused_checkpoint">paused checkpoint<\/span><\/a> <span class="figure">1</)
  t.match(page, /1<\/span> loaded from/)
  t.match(page, /1 not loaded/)
  t.match(page, /broken\/SOP\.toml:\d+<\/code>/)
  t.match(page, /does not attest/)
})

t.test('live: /events carries run changes and board events; bad topics refused', async (t) => {
  const { hub, url, bridge } = await startConsoleHub(t, {
    sops: { dispense: APPROVAL_SOP },
    boards: ['vend1'],
    heartbeatMs: 100,
  })
  const c = await signedIn(url, hub.console!.loginLink())
  const bad = await c.get('/events?topics=run,gossip', { accept: 'text/event-stream' })
  t.equal(bad.status, 400)
  t.match(((await bad.json()) as { error: string }).error, /unknown topic "gossip"/)

  await waitFor(() => bridge()?.stats().boards.vend1?.state === 'online', 'vend1 online')
  const runs = await openEvents(c, 'run')
  const boards = await openEvents(c, 'board,board-event')
  t.teardown(() => {
    runs.close()
    boards.close()
  })
  const id = await triggerRun(hub, 'dispense', { slot: 'A1' })
  await waitFor(
    () =>
      runs.got.some(
        (e) =>
          (e.data as { id: string; state: string }).id === id &&
          (e.data as { state: string }).state === 'paused_checkpoint',
      ),
    'the parked run on the stream',
  )
  t.ok(
    runs.got.every((e) => e.event === 'run'),
    'only the topics asked for',
  )

  const sim = bridge()!.simulated('vend1')!
  sim.emitEvents(1)
  await waitFor(() => boards.got.some((e) => e.event === 'board-event'), 'a board event')
  t.match(boards.got.find((e) => e.event === 'board-event')!.data, { board: 'vend1', signal: String })
  sim.setMute(true)
  await waitFor(
    () =>
      boards.got.some(
        (e) => e.event === 'board' && (e.data as { availability: string }).availability === 'offline',
      ),
    'vend1 offline',
  )
  sim.setMute(false)
  await waitFor(
    () =>
      boards.got.filter((e) => e.event === 'board').at(-1)?.data &&
      (boards.got.filter((e) => e.event === 'board').at(-1)!.data as { availability: string })
        .availability === 'online',
    'vend1 online again',
  )
  t.ok(
    runs.got.every((e) => e.event === 'run'),
    'the run stream got no board events',
  )
  // Signing out ends the session's streams: nothing more is reported to a signed-out page.
  const csrf = await c.csrf()
  t.equal((await c.post('/logout', { _csrf: csrf })).status, 303)
  await waitFor(() => runs.ended() && boards.ended(), 'both streams ended by the sign-out')
  t.pass('streams ended')
})
