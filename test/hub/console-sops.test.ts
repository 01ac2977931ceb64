// The console's SOPs pages on a real hub: the list with validation state (errors as file:line),
// triggers and last runs; a SOP's page with its step graph; a run started by hand from the form
// (a real run, its payload kept); bad payloads, forged posts and unknown SOPs refused with
// nothing triggered; the held backlog growing and draining.
import t from 'tap'
import { formatDiagnostic } from '../../sops/parse.ts'
import type { Teardown } from '../helpers/tmp.ts'
import { waitFor } from '../helpers/wait.ts'
import { ConsoleClient, startConsoleHub } from './console-helpers.ts'
import { BROKEN_SOP, HOLD_SOP } from './console-pages-fixtures.ts'

async function signedIn(t: Teardown) {
  const ch = await startConsoleHub(t, { sops: { vend: HOLD_SOP, broken: BROKEN_SOP } })
  const c = new ConsoleClient(ch.url)
  const res = await c.signInWithLink(ch.hub.console!.loginLink())
  if (res.status !== 200) throw new Error(`sign-in failed: ${res.status}`)
  return { ...ch, c, csrf: await c.csrf() }
}

const runsOf = async (ch: { hub: { engine: { queryRuns(f: object): Promise<{ runs: unknown[] }> } } }) =>
  (await ch.hub.engine.queryRuns({ sop: 'vend', limit: 100 })).runs.length

t.test('the list: loaded SOPs with triggers, the broken one with file:line errors', async (t) => {
  const ch = await signedIn(t)
  const res = await ch.c.get('/sops')
  t.equal(res.status, 200)
  const page = await res.text()
  t.match(page, /<a href="\/sops\/vend">vend<\/a>/)
  t.match(page, /manual; mqtt shop\/coin when \$\.amount &gt;= 1/, 'triggers as svc sop show prints them')
  t.match(page, /Dispense &lt;b&gt;after&lt;\/b&gt; a check &amp; a yes/, 'the description escaped')
  t.notMatch(page, /<b>after/)
  const errors = ch.hub.diagnostics.filter((d) => d.severity === 'error')
  t.ok(errors.length > 0, 'the hub did not load the broken SOP')
  for (const d of errors) {
    t.ok(
      page.includes(
        `<code class="error" title="${formatDiagnostic(d).replace(/"/g, '&quot;')}">broken/SOP.toml:${d.line}</code>`,
      ),
      `shown as file:line: ${formatDiagnostic(d)}`,
    )
    t.ok(page.includes(d.message.replace(/"/g, '&quot;')), 'with its message')
  }
  t.match(page, /1 not loaded/)
  t.match(page, /data-backlog="0"/, 'no backlog yet')
  t.match(page, /last run: <span class="muted">none yet/)
})

t.test('a SOP page: facts, triggers, the step graph, last runs, the form with its CSRF token', async (t) => {
  const ch = await signedIn(t)
  const res = await ch.c.get('/sops/vend')
  t.equal(res.status, 200)
  const page = await res.text()
  t.match(page, /<svg [^>]*class="sop-graph"/)
  t.equal([...page.matchAll(/<g data-step="/g)].length, 3, 'one box per step')
  t.match(page, /Check the &lt;slot&gt;/, 'step titles escaped in the graph')
  t.match(page, /data-route="retry" data-from="3" data-to="3"/)
  t.match(page, /data-terminal="true"/)
  t.match(page, /<pre>vend: 3 steps/, 'the graph as text too')
  t.match(page, new RegExp(`name="_csrf" value="${ch.csrf}"`))
  t.match(page, /<form method="post" action="\/sops\/vend\/trigger#run-h"/)
  t.match(page, /No runs yet/)
  const missing = await ch.c.get('/sops/nope')
  t.equal(missing.status, 404)
  t.match(await missing.text(), /no SOP named "nope" is loaded/)
})

t.test(
  'triggered by hand: a real run with the payload; bad JSON and forged posts change nothing',
  async (t) => {
    const ch = await signedIn(t)
    const form = (payload: string, csrf = ch.csrf) => ({ _csrf: csrf, payload })

    const bad = await ch.c.post('/sops/vend/trigger', form('{"slot": A1}'))
    t.equal(bad.status, 400)
    const badPage = await bad.text()
    t.match(
      badPage,
      /payload is not JSON at line 1, column 10: [^<]*; nothing was triggered/,
      'says what and where',
    )
    t.match(
      badPage,
      /<textarea [^>]*aria-invalid="true"[^>]*>\{&quot;slot&quot;: A1\}<\/textarea>/,
      'the text is kept to fix',
    )
    t.equal(await runsOf(ch), 0, 'no run')

    const forged = [
      await ch.c.post('/sops/vend/trigger', form('{}', 'x'.repeat(ch.csrf.length))),
      await ch.c.post('/sops/vend/trigger', form('{}', '')),
      await ch.c.post('/sops/vend/trigger', form('{}'), { origin: 'http://evil.example' }),
      await ch.c.post('/sops/vend/trigger', form('{}'), { origin: null }),
    ]
    t.same(
      forged.map((r) => r.status),
      [403, 403, 403, 403],
      'wrong token, no token, foreign origin, no origin',
    )
    t.match(await forged[0]!.text(), /nothing was changed/)
    t.equal(await runsOf(ch), 0, 'still no run')
    t.same(ch.hub.engine.keptTriggers(), [])
    // A JSON post with the payload as an object, not text: refused, not run with {}.
    const object = await ch.c.post('/sops/vend/trigger', { _csrf: ch.csrf, payload: { a: 1 } } as never, {
      json: true,
    })
    t.equal(object.status, 400)
    t.match(await object.text(), /payload: expected the text of the payload box/)
    t.equal(await runsOf(ch), 0, 'no run from it')
    const unknown = await ch.c.post('/sops/nope/trigger', form('{}'))
    t.equal(unknown.status, 404)

    const ok = await ch.c.post('/sops/vend/trigger', form('{"slot":"A1","amount":2}'))
    t.equal(ok.status, 303)
    const where = new URL(ok.headers.get('location')!, ch.url)
    t.equal(where.pathname, '/sops/vend')
    t.equal(where.searchParams.get('outcome'), 'started')
    const id = where.searchParams.get('run')!
    const run = await ch.hub.engine.getRun(id)
    t.match(run, {
      sop: 'vend',
      trigger: { type: 'manual', source: 'console', payload: { slot: 'A1', amount: 2 } },
    })
    const after = await (await ch.c.get(where.pathname + where.search)).text()
    t.match(after, new RegExp(`data-outcome="started">Triggered by hand: run <a href="/runs/${id}">`))
    await waitFor(
      async () => (await ch.hub.engine.getRun(id))?.state === 'paused_checkpoint',
      'the run at its checkpoint',
    )
    const list = await (await ch.c.get('/sops/vend')).text()
    t.match(
      list,
      new RegExp(`<tr data-run="${id}"><td><a href="/runs/${id}">`),
      'the run among the last runs',
    )
    t.match(list, /paused checkpoint/)

    // A crafted link cannot claim a run that is not this SOP's.
    const crafted = await (await ch.c.get('/sops/vend?outcome=started&run=not-a-run')).text()
    t.notMatch(crafted, /Triggered by hand/)
  },
)

t.test('the held backlog grows while a run waits, and drains as runs finish', async (t) => {
  const ch = await signedIn(t)
  const post = (payload: string) => ch.c.post('/sops/vend/trigger', { _csrf: ch.csrf, payload })
  const first = new URL((await post('{"n":0}')).headers.get('location')!, ch.url).searchParams.get('run')!
  await waitFor(
    async () => (await ch.hub.engine.getRun(first))?.state === 'paused_checkpoint',
    'run 1 parked',
  )
  for (let n = 1; n <= 3; n++) {
    const r = await post(`{"n":${n}}`)
    t.equal(new URL(r.headers.get('location')!, ch.url).searchParams.get('outcome'), 'held')
  }
  const held = await (await ch.c.get('/sops')).text()
  t.match(
    held,
    /<tr data-sop="vend"><td><a href="\/sops\/vend">vend<\/a><\/td><td data-held="3">3<\/td><td data-deferred="0">/,
  )
  t.match(await (await ch.c.get('/sops/vend')).text(), /data-held="3"/, 'on the SOP page too')

  // Each approval finishes a run; the next held trigger starts and parks in its turn.
  let current = first
  for (let left = 2; left >= 0; left--) {
    const r = await ch.hub.engine.approve(current, { by: 'test' })
    t.ok(r.ok)
    const next = await waitFor(
      () => ch.hub.engine.pending().find((p) => p.id !== current && p.state === 'paused_checkpoint'),
      'the next held trigger to start',
    )
    current = next.id
    const page = await (await ch.c.get('/sops')).text()
    if (left > 0) t.match(page, new RegExp(`data-held="${left}"`), `${left} still held`)
    else t.match(page, /data-backlog="0"/, 'drained')
  }
})
