// `svc sop …` in this process (test/helpers/cli.ts); one smoke test through bin/svc.js.
import t from 'tap'
import { spawnSync } from 'node:child_process'
import { cp, mkdir, readFile, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { svcCli } from '../helpers/cli.ts'
import { tempDir } from '../helpers/tmp.ts'

const repo = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
const examples = join(repo, 'sops', 'examples')
const broken = join(repo, 'test', 'sops', 'broken')

/** `svc sop <argv…>`; what it printed as its lines joined, without the last newline. */
async function run(argv: string[], env: NodeJS.ProcessEnv = {}, cwd = repo) {
  const r = await svcCli(env, cwd)('sop', ...argv)
  return { code: r.code, stdout: r.out.replace(/\n$/, ''), stderr: r.err.replace(/\n$/, '') }
}

t.test('validate accepts every example, by name and by directory', async (t) => {
  const all = await run(['validate', '--sops-dir', examples])
  t.equal(all.code, 0, all.stderr)
  t.match(all.stdout, /valid: nightly-report, temperature-alarm, vending-dispense/)
  for (const name of ['vending-dispense', 'temperature-alarm', 'nightly-report']) {
    const byName = await run(['validate', name, '--sops-dir', examples])
    t.equal(byName.code, 0, `${name} by name: ${byName.stderr}`)
    const byDir = await run(['validate', join('sops', 'examples', name)])
    t.equal(byDir.code, 0, `${name} by dir: ${byDir.stderr}`)
  }
})

t.test('validate rejects a broken SOP with file:line: message and exit 1', async (t) => {
  const r = await run(['validate', join(broken, 'several-errors-at-once')])
  t.equal(r.code, 1)
  const lines = r.stderr.split('\n')
  t.ok(
    lines.some(
      (l) =>
        l ===
        `${join(broken, 'several-errors-at-once', 'SOP.toml')}:5: "execution_mode" has unknown value "fast" (expected auto, supervised, step_by_step, priority_based, deterministic)`,
    ),
    r.stderr,
  )
  t.ok(
    lines.some((l) =>
      l.startsWith(`${join(broken, 'several-errors-at-once', 'SOP.md')}:10: call: is not valid JSON`),
    ),
  )
  t.ok(lines.some((l) => l.startsWith(`${join(broken, 'several-errors-at-once', 'SOP.md')}:12: terminal:`)))
  t.match(r.stderr, /invalid: 3 errors, 0 warnings/)
  t.notMatch(r.stderr, /\n\s+at /, 'no stack trace')
  const j = await run(['validate', join(broken, 'several-errors-at-once'), '--json'])
  t.equal(j.code, 1)
  const parsed = JSON.parse(j.stdout) as {
    valid: boolean
    diagnostics: Array<{ line: number; severity: string }>
  }
  t.equal(parsed.valid, false)
  t.same(
    parsed.diagnostics.map((d) => d.line),
    [10, 12, 5],
  )
})

t.test('usage errors exit 2 with one line; unknown names exit 1', async (t) => {
  for (const argv of [
    ['frobnicate'],
    ['list', '--colour'],
    ['validate', 'a', 'b'],
    ['show'],
    ['graph', 'a', 'b'],
    ['list', '--sops-dir'],
  ]) {
    const r = await run(argv)
    t.equal(r.code, 2, argv.join(' '))
    t.equal(r.stderr.split('\n').length, 1, `one line: ${r.stderr}`)
  }
  const none = await run(['sop', 'x'].slice(0, 0))
  t.equal(none.code, 2, 'no subcommand is a usage error')
  t.match(none.stdout, /usage: svc sop/)
  const help = await run(['--help'])
  t.equal(help.code, 0)
  t.match(help.stdout, /validate \[<name\|dir>\]/)
  const missing = await run(['show', 'no-such-sop', '--sops-dir', examples])
  t.equal(missing.code, 1)
  t.match(missing.stderr, /^svc sop: no SOP named "no-such-sop" in /)
  const broke = await tempDir(t)
  await cp(join(broken, 'toml-syntax-error'), join(broke, 'x'), { recursive: true })
  const hinted = await run(['validate', 'toml-syntax-error', '--sops-dir', broke])
  t.equal(hinted.code, 1)
  t.match(
    hinted.stderr,
    /no SOP named "toml-syntax-error" in .*; 1 file there failed to load, svc sop list shows why/,
  )
  const nodir = await run(['validate', './no/such/dir'])
  t.equal(nodir.code, 1)
  t.match(nodir.stderr, /no directory at/)
})

t.test('list shows loaded SOPs, invalid ones and load failures', async (t) => {
  const dir = await tempDir(t)
  await cp(join(examples, 'vending-dispense'), join(dir, 'vending-dispense'), { recursive: true })
  await cp(join(broken, 'bad-when'), join(dir, 'bad-when'), { recursive: true })
  await cp(join(broken, 'missing-md-file'), join(dir, 'pkg', 'half'), { recursive: true })
  const r = await run(['list', '--sops-dir', dir])
  t.equal(r.code, 1, 'a load failure is not a silent success')
  t.match(r.stdout, /vending-dispense\s+ok\s+deterministic/)
  t.match(r.stdout, /bad-when\s+INVALID/)
  t.match(
    r.stderr,
    new RegExp(`${join(dir, 'pkg', 'half', 'SOP.md').replace(/[/.]/g, '\\$&')}:1: SOP.md: file is missing`),
  )
  const j = JSON.parse((await run(['list', '--json', '--sops-dir', dir])).stdout) as {
    sops: Array<{ name: string; valid: boolean }>
  }
  t.same(
    j.sops.map((s) => [s.name, s.valid]),
    [
      ['bad-when', false],
      ['vending-dispense', true],
    ],
  )
  const empty = await run(['list', '--sops-dir', join(dir, 'nothing-here')])
  t.equal(empty.code, 0)
  t.match(empty.stdout, /no SOPs in/)
})

t.test('sops dir: --sops-dir wins over SVC_SOPS_DIR, which wins over SVC_HOME/sops', async (t) => {
  const home = await tempDir(t)
  const envDir = await tempDir(t)
  const flagDir = await tempDir(t)
  await cp(join(examples, 'nightly-report'), join(home, 'sops', 'nightly-report'), { recursive: true })
  await cp(join(examples, 'temperature-alarm'), join(envDir, 'temperature-alarm'), { recursive: true })
  await cp(join(examples, 'vending-dispense'), join(flagDir, 'vending-dispense'), { recursive: true })
  const names = async (argv: string[], env: NodeJS.ProcessEnv) =>
    (
      JSON.parse((await run(['list', '--json', ...argv], env)).stdout) as { sops: Array<{ name: string }> }
    ).sops.map((s) => s.name)
  t.same(await names([], { SVC_HOME: home }), ['nightly-report'])
  t.same(await names([], { SVC_HOME: home, SVC_SOPS_DIR: envDir }), ['temperature-alarm'])
  t.same(await names(['--sops-dir', flagDir], { SVC_HOME: home, SVC_SOPS_DIR: envDir }), ['vending-dispense'])
  t.same(await names([`--sops-dir=${flagDir}`], { SVC_HOME: home }), ['vending-dispense'])
})

t.test('plugin packages and duplicate names', async (t) => {
  const dir = await tempDir(t)
  await cp(join(examples, 'nightly-report'), join(dir, 'nightly-report'), { recursive: true })
  await cp(join(examples, 'temperature-alarm'), join(dir, 'acme-plugin', 'temperature-alarm'), {
    recursive: true,
  })
  const show = await run(['show', 'temperature-alarm', '--sops-dir', dir, '--json'])
  t.equal(show.code, 0, show.stderr)
  t.equal((JSON.parse(show.stdout) as { sop: { package: string } }).sop.package, 'acme-plugin')
  await cp(join(examples, 'nightly-report'), join(dir, 'acme-plugin', 'nightly-copy'), { recursive: true })
  const v = await run(['validate', '--sops-dir', dir])
  t.equal(v.code, 1)
  t.match(
    v.stderr,
    new RegExp(
      `acme-plugin/nightly-copy/SOP.toml:\\d+: duplicate SOP name "nightly-report" \\(also in ${dir}/nightly-report/SOP.toml:\\d+\\)`,
    ),
  )
  t.match(
    v.stderr,
    new RegExp(
      `${dir}/nightly-report/SOP.toml:\\d+: duplicate SOP name "nightly-report" \\(also in .*acme-plugin/nightly-copy/SOP.toml`,
    ),
  )
  const byName = await run(['graph', 'nightly-report', '--sops-dir', dir])
  t.equal(byName.code, 1)
  t.match(byName.stderr, /2 SOPs are named "nightly-report"/)
})

t.test('show and graph print triggers, steps and routes; --json matches', async (t) => {
  const s = await run(['show', 'vending-dispense', '--sops-dir', examples])
  t.equal(s.code, 0)
  t.match(s.stdout, /peripheral vend1\/coin when \$\.amount >= 1/)
  t.match(s.stdout, /2\. Confirm with the operator \[checkpoint\]/)
  t.match(s.stdout, /call: chain_attest \{"action":"vend\.dispense"/)
  const g = await run(['graph', 'nightly-report', '--sops-dir', examples])
  t.equal(g.code, 0)
  t.match(g.stdout, /\[1\] Fetch the summary\n\s+then -> step 2\n\s+on failure -> step 3/)
  t.match(g.stdout, /terminal steps: 2, 3/)
  const gj = JSON.parse(
    (await run(['graph', 'nightly-report', '--json', '--sops-dir', examples])).stdout,
  ) as {
    steps: Array<{
      step: number
      routes: Array<{ kind: string; target: number | null }>
      onFailure: { kind: string; target: number | null }
    }>
  }
  t.same(gj.steps[0]?.routes, [{ kind: 'sequence', target: 2 }])
  t.same(gj.steps[0]?.onFailure, { kind: 'on-failure-goto', target: 3 })
  t.same(gj.steps[1]?.routes, [{ kind: 'end', target: null }])
})

t.test('graph shows switch ports, when fall-through and depends_on', async (t) => {
  const dir = await tempDir(t)
  const sop = join(dir, 'router')
  await mkdir(sop, { recursive: true })
  await writeFile(join(sop, 'SOP.toml'), '[sop]\nname = "router"\ndescription = "routes"\n')
  await writeFile(
    join(sop, 'SOP.md'),
    `## Steps

1. **Measure**
2. **Route**
   - when: $.steps.1.ok == true
   - switch: hot>$.steps.1.c > 30>4; cold>$.steps.1.c < 5>3; broken>$.steps.1.c < -50>
   - depends_on: 1
3. **Heat**
   - terminal: true
4. **Cool**
`,
  )
  const g = await run(['graph', sop])
  t.equal(g.code, 0, g.stderr)
  t.match(
    g.stdout,
    /\[2\] Route\n\s+depends on: step 1\n\s+when not \(\$\.steps\.1\.ok == true\) -> step 3\n\s+switch hot \[\$\.steps\.1\.c > 30\] -> step 4\n\s+switch cold \[\$\.steps\.1\.c < 5\] -> step 3\n\s+switch broken \[\$\.steps\.1\.c < -50\] -> fail \(port has no target\)\n\s+no port matches -> end/,
  )
  t.match(g.stdout, /\[4\] Cool\n\s+then -> end/)
})

t.test('pending/approve/deny/logs/run are delegated to sop-runs unchanged', async (t) => {
  const src = await readFile(join(repo, 'cli', 'sop.ts'), 'utf8')
  t.match(src, /runsCommand\(sub, rest, io\)/)
  const r = await run(['pending', '--whatever'])
  // Whatever sop-runs answers, it answered (not our usage error about unknown options).
  t.notMatch(r.stderr, /unknown option "--whatever" \(see svc sop --help\)/)
})

t.test('smoke: bin/svc.js sop validate', async (t) => {
  const ok = spawnSync(
    process.execPath,
    [join(repo, 'bin', 'svc.js'), 'sop', 'validate', '--sops-dir', examples],
    { encoding: 'utf8', timeout: 60_000 },
  )
  t.equal(ok.status, 0, ok.stderr)
  const bad = spawnSync(
    process.execPath,
    [join(repo, 'bin', 'svc.js'), 'sop', 'validate', join(broken, 'bad-cron-value')],
    { encoding: 'utf8', timeout: 60_000 },
  )
  t.equal(bad.status, 1)
  t.match(bad.stderr, /SOP\.toml:9: trigger 1 \(cron\): bad cron expression/)
  t.notMatch(bad.stderr, /\n\s+at /)
})
