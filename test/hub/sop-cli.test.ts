// `svc sop runs|status|trigger|held|logs` and the SOP directory of `svc sop list|show`, against a
// real `svc hub` process (its own SVC_HOME, token and API info file), the CLI through main() as
// a user's shell would run it; then the same history read from the stored records once the hub
// has stopped.
import { mkdir, readdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { createEngine } from '../../hub/engine/index.ts'
import { historyBounds } from '../../hub/engine/log/retention.ts'
import { call, event, incompressible, memoryTools, sop as sopOf, step } from '../engine/helpers.ts'
import { svcCli } from '../helpers/cli.ts'
import { startHubChild } from '../helpers/hub-process.ts'
import { tempDir } from '../helpers/tmp.ts'
import { waitFor } from '../helpers/wait.ts'

async function writeSop(dir: string, name: string, toml: string, md: string): Promise<void> {
  await mkdir(join(dir, name), { recursive: true })
  await writeFile(
    join(dir, name, 'SOP.toml'),
    `[sop]\nname = "${name}"\n${toml}\n[[triggers]]\ntype = "manual"\n`,
  )
  await writeFile(join(dir, name, 'SOP.md'), md)
}

// greet: two quick steps, the second's output from the first. gate: the hold policy and an
// operator's confirmation before its only step, so one parked run holds every later trigger.
const GREET_MD = `# greet

## Steps

1. **Wait a moment**
   - call: {"tool":"wait","args":{"ms":1}}
2. **Wait again**
   - call: {"tool":"wait","args":{"ms":2}}
   - terminal: true
`
const GATE_MD = `# gate

## Steps

1. **Open the gate**
   - requires_confirmation: true
   - prompt: Open it?
   - call: {"tool":"wait","args":{"ms":1}}
   - terminal: true
`

/** `svc sop <argv…>` with this environment. */
function cli(env: NodeJS.ProcessEnv) {
  const svc = svcCli(env)
  return (...argv: string[]) => svc('sop', ...argv)
}

t.test('svc sop against a running hub, then from its stored records', async (t) => {
  const home = await tempDir(t, 'svc-sop-cli-')
  const sops = join(home, 'hub-sops')
  await writeSop(
    sops,
    'greet',
    'description = "greets"\nexecution_mode = "deterministic"\nmax_concurrent = 8',
    GREET_MD,
  )
  await writeSop(
    sops,
    'gate',
    'description = "one at a time"\nexecution_mode = "deterministic"\nadmission_policy = "hold"',
    GATE_MD,
  )
  await writeFile(
    join(home, 'hub.toml'),
    '[broker]\nport = 0\n[webhook]\nenabled = false\n[api]\nport = 0\n[console]\nport = 0\n',
  )
  // The hub loads SVC_SOPS_DIR; the shell the CLI runs in does not set it (as with `svc start --sops`).
  const hub = await startHubChild(t, home, { env: { SVC_SOPS_DIR: sops } })
  const env: NodeJS.ProcessEnv = { ...process.env, SVC_HOME: home, USER: 'tester' }
  delete env.SVC_SOPS_DIR
  const sop = cli(env)

  t.test('list and show see what the hub loads; another directory gets a note', async (t) => {
    const list = await sop('list')
    t.equal(list.code, 0, list.err)
    t.match(list.out, /^gate .*\ngreet /m, 'both SOPs of the running hub')
    t.equal((await sop('show', 'greet')).code, 0)
    const other = await tempDir(t, 'svc-other-sops-')
    const flagged = await sop('list', '--sops-dir', other)
    t.match(flagged.out, /no SOPs in .* \(from --sops-dir\)/)
    t.match(
      flagged.err,
      `note: the running hub (pid ${hub.pid}) loads SOPs from ${sops}, not ${other} (--sops-dir)`,
    )
    const fromEnv = await cli({ ...env, SVC_SOPS_DIR: other })('list')
    t.match(fromEnv.err, /note: the running hub .* \(SVC_SOPS_DIR\)/)
  })

  const ids: string[] = []
  t.test('trigger starts real runs; status shows the payload, the steps and their outputs', async (t) => {
    for (let i = 0; i < 5; i++) {
      const r = await sop('trigger', 'greet', '--payload', JSON.stringify({ n: i }))
      t.equal(r.code, 0, r.err)
      const m = /^started run ([0-9a-f-]{36}) of greet\n/.exec(r.out)
      t.ok(m, r.out)
      ids.push(m![1]!)
    }
    const j = JSON.parse((await sop('trigger', 'greet', '--json')).out) as { outcome: string; runId: string }
    t.equal(j.outcome, 'started')
    ids.push(j.runId)
    const status = async (id: string) => JSON.parse((await sop('status', id, '--json')).out)
    await waitFor(async () => (await status(ids[0]!)).run.state === 'completed', 'the first run to complete')
    const text = await sop('status', ids[0]!)
    t.equal(text.code, 0)
    t.match(text.out, /^from the running hub \(http:\/\/127\.0\.0\.1:\d+\)\n/)
    t.match(text.out, /completed/)
    t.match(text.out, /payload: \{"n":0\}/)
    t.match(
      text.out,
      /step 1 {2}completed {2}(\d+ ms|\d+\.\ds)\n {6}input: {2}\{"n":0\}\n {6}output: \{"waited_ms":1\}/,
    )
    t.match(
      text.out,
      /step 2 {2}completed .*\n {6}input: {2}\{"waited_ms":1\}\n {6}output: \{"waited_ms":2\}/,
    )
  })

  t.test('runs: newest first, a page at a time, filtered', async (t) => {
    await waitFor(async () => {
      const r = JSON.parse((await sop('runs', '--sop', 'greet', '--state', 'completed', '--json')).out)
      return r.runs.length === ids.length
    }, 'every greet run to complete')
    const seen: string[] = []
    let args = ['runs', '--sop', 'greet', '--limit', '4']
    let pages = 0
    for (;;) {
      const r = await sop(...args)
      t.equal(r.code, 0, r.err)
      pages++
      t.match(r.out, /^runs from the running hub/)
      // The oldest run is read by retention's passes (a minute apart here): either may be said.
      t.match(
        r.out,
        /^runs from .*\nhistory kept: (back to \S+ \(\d+[smh] ago\)|no runs when retention last looked, at most a minute ago), \d+(\.\d)? (B|KiB|MiB) \(30 days or 1\.0 GiB, whichever first\)\n/,
      )
      seen.push(...[...r.out.matchAll(/^([0-9a-f-]{36}) {2}greet {2}completed/gm)].map((m) => m[1]!))
      const more = /^more: svc sop (.*)$/m.exec(r.out)
      if (!more) break
      args = more[1]!.split(' ')
    }
    t.equal(pages, 2, 'six runs in pages of four')
    t.same([...seen].sort(), [...ids].sort(), 'every run once')
    const page = JSON.parse((await sop('runs', '--json', '--since', '1h')).out)
    t.match(page, { source: /the running hub/, next: null })
    t.same(
      page.runs.map((r: { createdAt: number }) => r.createdAt),
      [...page.runs.map((r: { createdAt: number }) => r.createdAt)].sort((a, b) => b - a),
      'newest first',
    )
    t.same(
      JSON.parse((await sop('runs', '--json', '--since', '2999-01-01')).out).runs,
      [],
      'none from the future',
    )
    t.same(JSON.parse((await sop('runs', '--json', '--state', 'failed')).out).runs, [])
  })

  t.test('held: the backlog grows behind a parked run and drains as runs are approved', async (t) => {
    const held = async () => JSON.parse((await sop('held', '--json')).out).sops
    t.same(await held(), [])
    t.match((await sop('held')).out, /no held or deferred triggers/)
    const first = await sop('trigger', 'gate', '--payload', '{"car":1}')
    t.match(first.out, /started run/)
    await waitFor(
      async () => JSON.parse((await sop('pending', '--json')).out).length === 1,
      'the gate run to park',
    )
    for (let i = 2; i <= 4; i++) {
      const r = await sop('trigger', 'gate', '--payload', JSON.stringify({ car: i }))
      t.equal(r.code, 0)
      t.match(r.out, /^held: .*\n {2}no run yet/)
      t.match(await held(), [{ sop: 'gate', count: i - 1, held: i - 1, deferred: 0 }], `${i - 1} held`)
    }
    const table = await sop('held')
    t.match(
      table.out,
      /^SOP +WAITING +HELD +DEFERRED +OLDEST +NEWEST +WHY\ngate +3 +3 +0 +\d+s ago +\d+s ago +hold: /,
    )
    for (let left = 2; left >= 0; left--) {
      // A released trigger leaves the backlog before its run reaches the gate: wait for it there.
      await waitFor(
        async () => JSON.parse((await sop('pending', '--json')).out).length === 1,
        'a run parked at the gate',
      )
      const [parked] = JSON.parse((await sop('pending', '--json')).out) as { id: string }[]
      t.equal((await sop('approve', parked!.id, '--note', 'go')).code, 0)
      await waitFor(
        async () => (await held()).reduce((n: number, b: { count: number }) => n + b.count, 0) === left,
        `${left} left held`,
      )
    }
    await waitFor(
      async () => JSON.parse((await sop('pending', '--json')).out).length === 1,
      'the last car to park',
    )
    const [last] = JSON.parse((await sop('pending', '--json')).out) as { id: string }[]
    await sop('approve', last!.id)
    t.same(await held(), [], 'drained')
    await waitFor(
      async () =>
        JSON.parse((await sop('runs', '--sop', 'gate', '--state', 'completed', '--json')).out).runs.length ===
        4,
      'all four gate runs to complete',
    )
    const st = await sop('status', last!.id)
    t.match(st.out, /approvals:\n {2}step 1 {2}approved by tester at \d{4}-/)
  })

  t.test('bad input: a clear error naming what, and nothing changes', async (t) => {
    const before = JSON.parse((await sop('runs', '--json', '--limit', '1000')).out).runs.length
    const cases: [string[], number, RegExp][] = [
      [['status', 'no-such-run'], 1, /no run with id "no-such-run" in the running hub/],
      [['logs', 'no-such-run'], 1, /no run with id "no-such-run"/],
      [['trigger', 'greet', '--payload', '{not json'], 2, /--payload is not JSON: .*position 1/],
      [['trigger', 'no-such-sop'], 1, /no SOP named "no-such-sop" is loaded on the running hub/],
      [['runs', '--since', 'last tuesday'], 2, /--since: "last tuesday" is not a time/],
      [['runs', '--state', 'sleeping'], 2, /--state "sleeping" is not one of pending, running/],
      [['runs', '--cursor', 'bogus'], 2, /cursor "bogus" is not one this hub gave out/],
      [['runs', '--limit', '0'], 2, /--limit takes a whole number from 1 to 1000/],
      [['runs', 'extra'], 2, /sop runs takes no arguments/],
      [['status'], 2, /sop status takes exactly one run id/],
      [['held', '--sop', 'x'], 2, /unknown option "--sop" for "sop held"/],
    ]
    const help = await sop('runs', '--help')
    t.equal(help.code, 0, 'help asked for is not an error')
    t.match(help.out, /^usage:\n {2}svc sop runs \[--sop NAME\]/)
    for (const [argv, code, msg] of cases) {
      const r = await sop(...argv)
      t.equal(r.code, code, argv.join(' '))
      t.match(r.err, msg)
    }
    t.equal(
      JSON.parse((await sop('runs', '--json', '--limit', '1000')).out).runs.length,
      before,
      'no run added',
    )
  })

  t.test('with the hub stopped, runs/status/logs read the stored records and say so', async (t) => {
    await hub.stop()
    const runs = await sop('runs', '--sop', 'greet')
    t.equal(runs.code, 0, runs.err)
    t.match(runs.out, /^runs from the stored records in .*data\/engine \(no hub is running\)\n/)
    const all = JSON.parse((await sop('runs', '--json', '--limit', '1000')).out) as {
      runs: { createdAt: number }[]
    }
    const first = new Date(Math.min(...all.runs.map((r) => r.createdAt))).toISOString()
    t.match(
      runs.out,
      new RegExp(
        `^history kept: back to ${first.replace(/\./g, '\\.')} \\(\\d+[smh] ago\\), \\d+(\\.\\d)? KiB \\(30 days or 1\\.0 GiB, whichever first\\)$`,
        'm',
      ),
      'the oldest stored run, read from the store',
    )
    t.notMatch((await sop('runs', '--json')).out, /history kept/, '--json is the page as before')
    t.equal([...runs.out.matchAll(/ {2}greet {2}completed/g)].length, ids.length)
    const logs = await sop('logs', ids[0]!)
    t.equal(logs.code, 0, logs.err)
    t.match(
      logs.out,
      /^from the stored records in .*\(no hub is running\)\n.*step 1 +info +completed: Wait a moment/,
    )
    const st = JSON.parse((await sop('status', ids[0]!, '--json')).out)
    t.match(st, {
      source: /stored records/,
      run: { id: ids[0], trigger: { payload: { n: 0 } }, state: 'completed' },
    })
    t.match((await sop('status', 'no-such-run')).err, /no run with id "no-such-run" in the stored records/)
    const held = await sop('held')
    t.equal(held.code, 1)
    t.match(held.err, /no hub is running/)
    const trig = await sop('trigger', 'greet')
    t.equal(trig.code, 1)
    t.match(trig.err, /no hub is running/)
  })
})

t.test('a store read with no hub running drops nothing, whatever its age', async (t) => {
  // Runs made 40 days ago by the engine's clock, in 64 KiB segments, kept for a year by hub.toml:
  // a reader that applied the engine's default bounds (30 days) would drop the full segments.
  const home = await tempDir(t, 'svc-sop-old-')
  await writeFile(
    join(home, 'hub.toml'),
    '[history]\nmax_age_days = 365\nsegment_mb = 0.0625\n[api]\nport = 0\n',
  )
  const back = Date.now() - 40 * 86_400_000
  const engine = await createEngine({
    sops: [sopOf({ name: 'old', maxConcurrent: 4, steps: [step(1, { calls: [call('echo', { x: 1 })] })] })],
    tools: memoryTools().registry,
    dbPath: join(home, 'data', 'engine'),
    history: historyBounds({ maxAgeDays: 365, maxMb: 1024, segmentMb: 0.0625 }),
    now: () => back,
  })
  for (let i = 0; i < 30; i++) await engine.trigger('old', event({ i, pad: incompressible(8000) }, back))
  await engine.idle()
  const made = (await engine.queryRuns({ limit: 1000 })).runs
  await engine.close()
  const segments = (await readdir(join(home, 'data', 'engine', 'history'))).length
  t.ok(segments >= 3, `the runs fill ${segments} segments`)

  const env: NodeJS.ProcessEnv = { ...process.env, SVC_HOME: home }
  delete env.SVC_SOPS_DIR
  const sopCli = cli(env)
  const r = await sopCli('runs', '--limit', '1000')
  t.equal(r.code, 0, r.err)
  t.match(r.out, /^runs from the stored records/)
  t.equal([...r.out.matchAll(/ {2}old {2}completed/g)].length, made.length, 'every run listed')
  t.match(
    r.out,
    new RegExp(
      `^history kept: back to ${new Date(back).toISOString().replace(/\./g, '\\.')} \\(40d ago\\), \\d+(\\.\\d)? KiB \\(365 days or 1\\.0 GiB, whichever first\\)$`,
      'm',
    ),
  )
  t.equal((await readdir(join(home, 'data', 'engine', 'history'))).length, segments, 'no segment dropped')
  const again = JSON.parse((await sopCli('runs', '--json', '--limit', '1000')).out) as { runs: unknown[] }
  t.equal(again.runs.length, 30, 'and every run still there on the next read')
})
