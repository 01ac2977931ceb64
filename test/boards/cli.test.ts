// `svc board simulate` as a user runs it: a separate process, stopped by its pid.
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import t from 'tap'
import { createBridge } from '../../bridge/index.ts'
import { svcCli } from '../helpers/cli.ts'
import { noSocat, startPtyPair } from '../bridge/pty.ts'
import { tempDir } from '../helpers/tmp.ts'
import { waitFor } from '../helpers/wait.ts'

const root = join(import.meta.dirname, '..', '..')

const svc = svcCli({}, root)

t.test('bad options are usage errors that say what was wrong', async (t) => {
  const cases: Array<[string[], RegExp]> = [
    [['board', 'simulate', '--rate', 'fast'], /--rate: must be a number from 0 to 100000, got "fast"/],
    [['board', 'simulate', '--rate=-1'], /--rate: must be a number from 0 to 100000, got "-1"/],
    [['board', 'simulate', '--name', 'a/b'], /--name: must match/],
    [['board', 'simulate', '--signal', '#'], /--signal: must match/],
    [['board', 'simulate', '--bogus'], /Unknown option '--bogus'/],
    [['board', 'simulate', 'extra'], /unexpected argument "extra"/],
    [['board', 'frobnicate'], /unknown subcommand "frobnicate"/],
  ]
  for (const [argv, re] of cases) {
    const r = await svc(...argv)
    t.equal(r.code, 2, argv.join(' '))
    t.match(r.err, re)
    t.equal(r.err.split('\n')[0]!.startsWith('svc board: '), true, 'one line, no stack')
  }
  const help = await svc('board', 'simulate', '--help')
  t.equal(help.code, 0)
  // The usage may list the other board subcommands first (status, send); simulate's line is in it.
  t.match(help.out, /^usage: [\s\S]*svc board simulate \[--port PATH\] \[--rate N\] \[--name NAME\]/)
  const missing = await svc('board', 'simulate', '--port', '/nonexistent/tty')
  t.equal(missing.code, 1)
  t.match(missing.err, /^svc board: cannot open \/nonexistent\/tty: /)
})

t.test('svc board simulate --port plays a board the bridge can talk to', { skip: noSocat }, async (t) => {
  const dir = await tempDir(t)
  const pair = await startPtyPair(dir)
  t.teardown(() => pair.stop())
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      join(root, 'cli/main.ts'),
      'board',
      'simulate',
      '--port',
      pair.board,
      '--rate',
      '50',
      '--name',
      'demo',
    ],
    { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] },
  )
  let stdout = ''
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
  child.stderr.on('data', (d: Buffer) => (stdout += d.toString()))
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)))
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL')
  })
  await waitFor(() => stdout.includes('simulating board demo'), 'the simulator started', {
    timeoutMs: 60_000,
  })

  const events: string[] = []
  const bridge = createBridge({
    boards: [{ name: 'demo', port: pair.hub, heartbeatMs: 0 }],
    publish: async (topic, payload) => void events.push(`${topic} ${payload}`),
  })
  t.teardown(() => bridge.close())
  await bridge.start()
  await waitFor(
    () => events.filter((e) => e.startsWith('boards/demo/coin ')).length >= 3,
    'events from the CLI simulator',
  )
  t.match(
    events.find((e) => e.startsWith('boards/demo/coin '))!,
    /^boards\/demo\/coin \{"slot":"A\d","amount":[12]\}$/,
  )
  t.same(await bridge.send('demo', 'ping', {}), { ok: true, result: 'pong' })
  await bridge.close()

  child.kill('SIGINT') // the process we started, by its pid
  t.equal(await exited, 0, 'exits 0 on SIGINT')
  // Ours, and the ping the bridge sends when it opens the port to learn the board is there.
  t.match(stdout, /stopped \(signal\): \d+ events sent, 2 commands answered/)
})

t.test(
  'svc board simulate without --port makes a pty pair and prints the hub end',
  { skip: noSocat },
  async (t) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', join(root, 'cli/main.ts'), 'board', 'simulate', '--rate', '0'],
      { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] },
    )
    let stdout = ''
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)))
    t.teardown(() => {
      if (child.exitCode === null) child.kill('SIGKILL')
    })
    await waitFor(() => /port = "(.+)"/.test(stdout), 'the hub end printed', { timeoutMs: 60_000 })
    const hubEnd = /port = "(.+)"/.exec(stdout)![1]!
    const bridge = createBridge({
      boards: [{ name: 'vend1', port: hubEnd, heartbeatMs: 0 }],
      publish: async () => undefined,
    })
    t.teardown(() => bridge.close())
    await bridge.start()
    t.same(await bridge.send('vend1', 'gpio_read', { pin: 2 }), { ok: true, result: { pin: 2, value: 0 } })
    // (Its hello went out before the bridge opened the port; the tty discards it on open, as it
    // would for a real board already running. Hello is informational: the config names the port.)
    await bridge.close()
    child.kill('SIGTERM')
    t.equal(await exited, 0)
  },
)
