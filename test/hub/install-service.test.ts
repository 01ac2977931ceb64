// `svc hub install-service` as a new user runs it: --print and --out in a temp folder, what it
// prints, an existing unit kept unless --force, the paths hub.toml adds, bad input. The unit is
// checked by systemd's own parser (systemd-analyze verify) and then run as systemd would run it:
// its ExecStart, environment and working directory, against a notify socket the test binds, up to
// READY=1. The shipped hub/svc-hub.service is the unit for the Raspberry Pi steps, byte for byte.
import t from 'tap'
import { execFileSync, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { findJemalloc } from '../../hub/service/jemalloc.ts'
import {
  PI_INSTALL,
  type UnitInput,
  execWord,
  renderUnit,
  unitPath,
  unitWord,
} from '../../hub/service/unit.ts'
import { svcCli } from '../helpers/cli.ts'
import { commandMissing } from '../helpers/command-missing.ts'
import { notifyReceiverMissing, startNotifyReceiver } from '../helpers/notify-receiver.ts'
import { tempDir } from '../helpers/tmp.ts'
import { waitFor } from '../helpers/wait.ts'

const root = fileURLToPath(new URL('../..', import.meta.url)).replace(/\/$/, '')

const noAnalyze = commandMissing(
  'systemd-analyze',
  ['--version'],
  "systemd-analyze (Debian's systemd package) to parse the unit",
)

/** systemd's verdict on a unit file: null when it parses clean, else what it said. */
function verify(file: string): string | null {
  try {
    execFileSync('systemd-analyze', ['verify', file], { stdio: 'pipe' })
    return null
  } catch (err) {
    return String((err as { stderr?: Buffer }).stderr ?? err)
  }
}

/** The value of every `Key=` line, in order. */
function values(unit: string, key: string): string[] {
  return unit
    .split('\n')
    .filter((l) => l.startsWith(`${key}=`))
    .map((l) => l.slice(key.length + 1))
}

t.test('the shipped unit is what install-service writes for the Raspberry Pi steps', async (t) => {
  const shipped = await readFile(join(root, 'hub/svc-hub.service'), 'utf8')
  t.equal(shipped, renderUnit(PI_INSTALL), 'hub/svc-hub.service = renderUnit(PI_INSTALL)')
  t.same(values(shipped, 'Type'), ['notify'])
  t.same(values(shipped, 'NotifyAccess'), ['main'])
  t.same(values(shipped, 'WatchdogSec'), ['30'])
  t.same(values(shipped, 'ExecStart'), [
    '/usr/bin/perl /opt/svc/hub/service/notify-socket.pl /usr/bin/node /opt/svc/dist/main.js hub --config /etc/svc/hub.toml',
  ])
})

t.test('systemd parses the units', { skip: noAnalyze ?? false }, async (t) => {
  const dir = await tempDir(t)
  const cases: [string, Partial<UnitInput>][] = [
    ['the shipped one', {}],
    [
      'a checkout and node in /home, state in /tmp',
      { root: '/home/pi/svc', node: '/home/pi/.nvm/node', home: '/tmp/x' },
    ],
    ['jemalloc preloaded', { jemalloc: '/usr/lib/aarch64-linux-gnu/libjemalloc.so.2' }],
    [
      'paths with a space, % and $',
      { root: '/opt/my svc', home: '/srv/100%/$HOME', config: '/etc/svc/a "b".toml' },
    ],
  ]
  for (const [what, o] of cases) {
    const file = join(dir, 'svc-hub.service')
    await writeFile(file, renderUnit({ ...PI_INSTALL, ...o }))
    t.equal(verify(file), null, what)
  }
})

t.test('what the unit protects follows where the install lives', async (t) => {
  const pi = renderUnit(PI_INSTALL)
  t.same(values(pi, 'ProtectHome'), ['true'])
  t.same(values(pi, 'PrivateTmp'), ['true'])
  t.same(values(pi, 'StateDirectory'), ['svc'])
  t.same(values(pi, 'ConfigurationDirectory'), ['svc'])
  t.same(values(pi, 'ReadWritePaths'), ['/var/lib/svc'])

  const user = renderUnit({
    ...PI_INSTALL,
    root: '/home/pi/svc',
    node: '/home/pi/.nvm/versions/node/v20.19.0/bin/node',
    home: '/home/pi/.svc',
    config: '/home/pi/hub.toml',
    writable: ['/srv/svc-data'],
  })
  t.same(values(user, 'ProtectHome'), ['read-only'], 'a checkout in /home stays readable')
  t.same(values(user, 'StateDirectory'), [], 'no StateDirectory= outside /var/lib')
  t.same(values(user, 'ConfigurationDirectory'), [], 'no ConfigurationDirectory= outside /etc')
  t.same(values(user, 'ReadWritePaths'), ['/home/pi/.svc /srv/svc-data'], 'SVC_HOME and what hub.toml adds')

  t.same(values(renderUnit({ ...PI_INSTALL, home: '/tmp/svc' }), 'PrivateTmp'), ['false'], 'state in /tmp')
  t.equal(unitWord('/opt/svc'), '/opt/svc')
  t.equal(unitWord('/srv/100%/$x'), '/srv/100%%/$x', 'specifiers taken literally; $ means nothing in a list')
  t.equal(execWord('/srv/100%/$x'), '/srv/100%%/$$x', 'in ExecStart, $ is taken literally too')
  t.equal(unitWord('/opt/my svc'), '"/opt/my svc"')
  t.equal(unitWord('/a "b"\\c'), '"/a \\"b\\"\\\\c"')
  t.equal(unitPath('/opt/my svc/100%'), '/opt/my svc/100%%', 'WorkingDirectory= takes no quotes')
})

t.test('--print: the unit on stdout, what to run next on stderr', async (t) => {
  const dir = await tempDir(t)
  const svc = svcCli({ PATH: process.env.PATH }, dir)
  const r = await svc(
    'hub',
    'install-service',
    '--print',
    '--home',
    'state',
    '--config',
    'hub.toml',
    '--user',
    'root',
  )
  t.equal(r.code, 0, r.err)
  t.match(r.out, /^# systemd unit for the svc hub/)
  t.same(values(r.out, 'User'), ['root'])
  t.same(
    values(r.out, 'Environment')[0],
    `SVC_HOME=${join(dir, 'state')}`,
    'relative paths are taken from the cwd',
  )
  const [exec] = values(r.out, 'ExecStart')
  t.match(
    exec,
    new RegExp(
      `^/\\S*perl ${root}/hub/service/notify-socket\\.pl ${process.execPath} ${root}/(dist/main|bin/svc)\\.js hub --config ${join(dir, 'hub.toml')}$`,
    ),
    'perl, the wrapper in this checkout, this node, the entry, the config',
  )
  t.match(r.err, /^the unit for .* is above$/m)
  t.match(
    r.err,
    new RegExp(`^note: ${join(dir, 'hub.toml')} does not exist yet; the hub will not start without it$`, 'm'),
  )
  t.match(r.err, /svc hub config\) \| sudo tee \S+hub\.toml/, 'how to make the config')
  t.match(
    r.err,
    new RegExp(`^  sudo install -d -o root -m 0750 ${join(dir, 'state')}$`, 'm'),
    'how to make SVC_HOME',
  )
  t.match(r.err, /^ {2}sudo tee \/etc\/systemd\/system\/svc-hub\.service < FILE/m)
  t.match(r.err, /^ {2}sudo systemctl daemon-reload\n {2}sudo systemctl enable --now svc-hub$/m)
  t.notMatch(r.err, /useradd/, 'an existing user is not added')
  if (existsSync(join(root, 'dist/main.js'))) t.notMatch(r.err, /dist\/main\.js is not built/)
  else t.match(r.err, /^note: dist\/main\.js is not built: the unit runs bin\/svc\.js through tsx/m)

  const nobody = await svc('hub', 'install-service', '--print', '--user', 'svc-no-such-user')
  t.match(
    nobody.err,
    /^ {2}sudo useradd --system --home-dir \/var\/lib\/svc --shell \/usr\/sbin\/nologin svc-no-such-user$/m,
  )
})

t.test('--out: written once, kept when unchanged, a different unit refused without --force', async (t) => {
  const dir = await tempDir(t)
  const svc = svcCli({ PATH: process.env.PATH }, dir)
  await writeFile(join(dir, 'hub.toml'), `[hub]\ndata_dir = "${join(dir, 'elsewhere')}"\n`)
  const out = join(dir, 'svc-hub.service')
  const args = [
    'hub',
    'install-service',
    '--out',
    out,
    '--home',
    join(dir, 'home'),
    '--config',
    join(dir, 'hub.toml'),
  ]
  const first = await svc(...args, '--user', 'root')
  t.equal(first.code, 0, first.err)
  t.match(first.out, new RegExp(`^wrote ${out}$`, 'm'))
  t.match(first.out, new RegExp(`also writing ${join(dir, 'elsewhere')}`), 'says the data_dir hub.toml sets')
  t.notMatch(first.out, /does not exist yet/, 'the config is there')
  t.match(first.out, new RegExp(`^  sudo cp ${out} /etc/systemd/system/svc-hub\\.service$`, 'm'))
  const unit = await readFile(out, 'utf8')
  t.same(values(unit, 'ReadWritePaths'), [`${join(dir, 'home')} ${join(dir, 'elsewhere')}`])
  if (!noAnalyze) t.equal(verify(out), null, 'systemd parses it')

  const again = await svc(...args, '--user', 'root')
  t.equal(again.code, 0)
  t.match(again.out, /is already this unit; nothing written/)

  const other = await svc(...args, '--user', 'daemon')
  t.equal(other.code, 1)
  t.match(
    other.err,
    /exists and differs from the unit for this install \(line \d+: "User=root" here, "User=daemon" for this install\); --force replaces it/,
  )
  t.equal(await readFile(out, 'utf8'), unit, 'the existing unit is untouched')

  const forced = await svc(...args, '--user', 'daemon', '--force')
  t.equal(forced.code, 0)
  t.match(forced.out, new RegExp(`^replaced ${out}$`, 'm'))
  t.same(values(await readFile(out, 'utf8'), 'User'), ['daemon'])
})

t.test('bad input is named', async (t) => {
  const dir = await tempDir(t)
  const svc = svcCli({ PATH: process.env.PATH }, dir)
  const cases: [string[], number, RegExp][] = [
    [['--print', '--user', 'two words'], 2, /--user: "two words" is not a user name systemd accepts/],
    [['--print', '--out', 'x.service'], 2, /--print and --out: give one/],
    [['--print', '--home', ''], 2, /--home: empty/],
    [['--print', '--home', '/srv/a\nb'], 2, /--home: "\/srv\/a\\nb" has a control character in it/],
    [['--print', 'now'], 2, /unexpected argument "now"/],
    [['--print', '--frobnicate'], 2, /Unknown option '--frobnicate'/],
    [
      ['--out', join(dir, 'no-such-dir', 'svc-hub.service')],
      1,
      /cannot write \S+no-such-dir\/svc-hub\.service: ENOENT/,
    ],
  ]
  for (const [argv, code, message] of cases) {
    const r = await svc('hub', 'install-service', ...argv)
    t.equal(r.code, code, argv.join(' '))
    t.match(r.err, message)
  }
  await writeFile(join(dir, 'bad.toml'), '[broker]\nport = "many"\n')
  const r = await svc('hub', 'install-service', '--print', '--config', 'bad.toml')
  t.equal(r.code, 1)
  t.match(r.err, /bad\.toml.*broker\.port.*\(the hub would not start with it: fix it, then run this again\)/)
  t.equal(r.out, '', 'no unit for a config the hub refuses')
  const help = await svc('hub', 'install-service', '--help')
  t.match(help.out, /^usage: svc hub install-service/)
  t.match((await svc('hub', '--help')).out, /svc hub install-service/, 'svc hub --help names it')
})

t.test(
  "the unit's ExecStart starts a hub that tells systemd it is ready",
  {
    skip:
      notifyReceiverMissing() ??
      (existsSync(join(root, 'dist/main.js'))
        ? 'this checkout has a dist/ bundle, which the unit runs as it was built (test/hub/dist.test.ts runs a fresh one)'
        : false),
  },
  async (t) => {
    const dir = await tempDir(t)
    const home = join(dir, 'home')
    const config = join(dir, 'hub.toml')
    await writeFile(
      config,
      '[broker]\nport = 0\n[webhook]\nenabled = false\n[api]\nport = 0\n[console]\nenabled = false\n',
    )
    const r = await svcCli({ PATH: process.env.PATH }, dir)(
      'hub',
      'install-service',
      '--print',
      '--home',
      home,
      '--config',
      config,
    )
    t.equal(r.code, 0, r.err)
    // Nothing in these paths needs quoting, so ExecStart splits on spaces as systemd would split it.
    const [file, ...argv] = values(r.out, 'ExecStart')[0]!.split(' ') as [string, ...string[]]
    const env = Object.fromEntries(values(r.out, 'Environment').map((e) => e.split(/=(.*)/s).slice(0, 2)))
    const sock = join(dir, 'notify.sock')
    const notify = await startNotifyReceiver(t, sock)
    const hub = spawn(file, argv, {
      cwd: values(r.out, 'WorkingDirectory')[0],
      env: { PATH: process.env.PATH, ...env, NOTIFY_SOCKET: sock, WATCHDOG_USEC: '2000000' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let log = ''
    hub.stdout!.on('data', (d: Buffer) => void (log += d))
    hub.stderr!.on('data', (d: Buffer) => void (log += d))
    const exited = new Promise<number | null>((done) => hub.once('exit', (code) => done(code)))
    t.teardown(async () => {
      if (hub.exitCode === null && hub.signalCode === null) {
        process.kill(hub.pid as number, 'SIGKILL')
        await exited
      }
    })
    await waitFor(
      () => {
        if (hub.exitCode !== null) throw new Error(`the hub exited (${hub.exitCode}): ${log}`)
        return notify.messages.some((m) => m.fields.READY === '1')
      },
      'READY=1',
      { timeoutMs: 60_000 },
    )
    await waitFor(() => notify.messages.some((m) => m.fields.WATCHDOG === '1'), 'a watchdog ping')
    t.ok(existsSync(join(home, 'data', 'engine')), 'the hub keeps its state in --home')
    // jemalloc is in the unit exactly when node here runs with it, and then the hub has it mapped.
    const jemalloc = await findJemalloc()
    t.equal(env.LD_PRELOAD ?? null, jemalloc.path, `the unit's LD_PRELOAD (${jemalloc.path ?? jemalloc.why})`)
    t.equal(
      (await readFile(`/proc/${hub.pid}/maps`, 'utf8')).includes('libjemalloc'),
      jemalloc.path !== null,
      'the running hub maps libjemalloc when the unit preloads it',
    )
    if (jemalloc.path === null) t.match(r.err, /^note: the unit keeps glibc's malloc: /m)
    else t.match(r.err, new RegExp(`^ {2}malloc jemalloc \\(${jemalloc.path}`, 'm'))
    process.kill(hub.pid as number, 'SIGTERM')
    t.equal(await exited, 0, 'SIGTERM: a clean stop')
    t.ok(
      notify.messages.some((m) => m.fields.STOPPING === '1'),
      'STOPPING=1',
    )
    t.same([...new Set(notify.messages.map((m) => m.pid))], [hub.pid], 'from the main PID')
  },
)
