// `svc hub user add|remove|list`: what lands in the accounts file (0600, scrypt, never the
// password), where the password may come from, and bad input refused with nothing changed.
// The terminal prompt is the one edge given by the test (a TTY cannot be had under tap); standard
// input is also driven for real through `bin/svc.js` in a child process.
import t from 'tap'
import { spawn } from 'node:child_process'
import { chmod, readFile, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { readAccountsFile } from '../../hub/broker/accounts-file.ts'
import { parseScryptHash, verifyPassword } from '../../hub/broker/password.ts'
import { type PasswordInput, userCommand } from '../../cli/hub-user.ts'
import { main } from '../../cli/main.ts'
import { UserError } from '../../cli/io.ts'
import { tempDir } from '../helpers/tmp.ts'

const root = fileURLToPath(new URL('../..', import.meta.url))

function setup(home: string, input: Partial<PasswordInput> = {}) {
  const out: string[] = []
  const err: string[] = []
  const io = {
    out: (s: string) => void out.push(s),
    err: (s: string) => void err.push(s),
    env: { SVC_HOME: home },
    cwd: home,
  }
  const cmd = userCommand({ readStdin: async () => '', prompt: null, ...input })
  /** Runs the command; a UserError comes back as its exit code, with its message in `err`. */
  const run = async (...argv: string[]): Promise<number> => {
    try {
      return await cmd(argv, io)
    } catch (e) {
      if (e instanceof UserError) {
        err.push(e.message)
        return e.exitCode
      }
      throw e
    }
  }
  return { run, out, err, io, file: join(home, 'data', 'broker-accounts') }
}

const stdinOf = (text: string): Partial<PasswordInput> => ({ readStdin: async () => text })

t.test('add, list, update, remove', async (t) => {
  const home = await tempDir(t)
  let s = setup(home, stdinOf('correct horse battery\n'))
  t.equal(await s.run('add', 'esp1', '--role', 'board', '--password-stdin'), 0)
  t.match(
    s.out.join(''),
    /account "esp1" added \(role board: publishes and subscribes under boards\/esp1\/ only\)/,
  )
  t.equal((await stat(s.file)).mode & 0o777, 0o600, 'the file is 0600')
  const text = await readFile(s.file, 'utf8')
  t.notMatch(text, /correct horse/, 'the password is not in the file')
  const read = await readAccountsFile(s.file)
  if (!read.ok) throw new Error(read.error)
  t.equal(
    await verifyPassword(Buffer.from('correct horse battery'), read.accounts[0]!.scrypt),
    true,
    'its hash checks',
  )

  s = setup(home)
  s.io.env = { SVC_HOME: home, OPS_PW: 'admin password 1' } as never
  t.equal(await s.run('add', 'ops', '--role', 'admin', '--password-env', 'OPS_PW'), 0)
  s = setup(home, { prompt: async () => 'reader password' })
  t.equal(
    await s.run('add', 'cam', '--role', 'board', '--board', 'camera-2', 'ignored?'),
    2,
    'a stray argument',
  )
  t.match(s.err.join(''), /the password is never an argument/)
  t.equal(await s.run('add', 'cam', '--role', 'board', '--board', 'camera-2'), 0, 'prompted')

  s = setup(home)
  t.equal(await s.run('list'), 0)
  t.same(s.out, ['name  role    board', 'cam   board   camera-2', 'esp1  board   esp1', 'ops   admin'])
  s = setup(home)
  t.equal(await s.run('list', '--json'), 0)
  t.same(JSON.parse(s.out.join('')), [
    { name: 'cam', role: 'board', board: 'camera-2' },
    { name: 'esp1', role: 'board', board: 'esp1' },
    { name: 'ops', role: 'admin', board: null },
  ])

  s = setup(home, stdinOf('a new password here'))
  t.equal(await s.run('add', 'esp1', '--role', 'reader', '--password-stdin'), 0)
  t.match(s.out.join(''), /account "esp1" updated \(role reader/)
  const after = await readAccountsFile(s.file)
  if (!after.ok) throw new Error(after.error)
  const esp1 = after.accounts.find((a) => a.name === 'esp1')!
  t.equal(await verifyPassword(Buffer.from('a new password here'), esp1.scrypt), true)
  t.equal(esp1.role, 'reader')

  s = setup(home)
  t.equal(await s.run('remove', 'cam'), 0)
  t.equal(await s.run('remove', 'cam'), 1, 'twice')
  t.match(s.err.join(''), /no account "cam"/)
  const left = await readAccountsFile(s.file)
  t.same(left.ok && left.accounts.map((a) => a.name), ['esp1', 'ops'])
})

t.test('bad input changes nothing', async (t) => {
  const home = await tempDir(t)
  let s = setup(home, stdinOf('correct horse battery'))
  t.equal(await s.run('add', 'ops', '--role', 'admin', '--password-stdin'), 0)
  const before = await readFile(s.file, 'utf8')
  const cases: [string[], Partial<PasswordInput> | Record<string, string>, number, RegExp][] = [
    [
      ['add', 'a/b', '--role', 'admin', '--password-stdin'],
      {},
      2,
      /user name "a\/b" must match \[A-Za-z0-9_.-\]\{1,64\}/,
    ],
    [['add', 'x'.repeat(65), '--role', 'admin', '--password-stdin'], {}, 2, /must match/],
    [['add', 'a:b', '--role', 'admin', '--password-stdin'], {}, 2, /must match/],
    [
      ['add', 'ann', '--role', 'root', '--password-stdin'],
      {},
      2,
      /unknown role "root" \(one of admin, reader, board\)/,
    ],
    [['add', 'ann', '--password-stdin'], {}, 2, /needs --role/],
    [
      ['add', 'ann', '--role', 'admin', '--board', 'b1', '--password-stdin'],
      {},
      2,
      /--board applies to role board only/,
    ],
    [['add', 'ann', '--role', 'board', '--board', 'b/1', '--password-stdin'], {}, 2, /board name "b\/1"/],
    [['add', 'ann', '--role', 'reader', '--password-stdin'], stdinOf(''), 1, /the password is empty/],
    [['add', 'ann', '--role', 'reader', '--password-stdin'], stdinOf('\n'), 1, /the password is empty/],
    [
      ['add', 'ann', '--role', 'reader', '--password-stdin'],
      stdinOf('short\n'),
      1,
      /shorter than 12 characters/,
    ],
    [
      ['add', 'ann', '--role', 'reader', '--password-stdin'],
      stdinOf('line one is long\nline two\n'),
      1,
      /more than one line/,
    ],
    [
      ['add', 'ann', '--role', 'reader', '--password-env', 'NOPE'],
      {},
      1,
      /environment variable NOPE is not set/,
    ],
    [['add', 'ann', '--role', 'reader', '--password-env', 'A-B'], {}, 2, /not a variable name/],
    [['add', 'ann', '--role', 'reader', '--password-env', 'X', '--password-stdin'], {}, 2, /not both/],
    [['add', 'ann', '--role', 'reader'], {}, 2, /no terminal to ask for the password/],
    [
      ['add', 'ann', '--role', 'reader'],
      { prompt: async (q: string) => (q.includes('again') ? 'second password' : 'first password!') },
      1,
      /the passwords differ/,
    ],
    [['remove', 'ghost'], {}, 1, /no account "ghost"/],
    [['frob', 'x'], {}, 2, /unknown command "frob"/],
    [['add', 'ann', '--role', 'reader', '--bogus'], {}, 2, /Unknown option '--bogus'/],
  ]
  for (const [argv, input, code, message] of cases) {
    s = setup(home, input as Partial<PasswordInput>)
    t.equal(await s.run(...argv), code, argv.join(' '))
    t.match(s.err.join(''), message)
    t.equal(await readFile(s.file, 'utf8'), before, 'unchanged')
  }

  // A board that is one of hub.toml's [[boards]]: its topics are the hub's.
  await writeFile(join(home, 'hub.toml'), '[[boards]]\nname = "vend1"\nport = "/dev/ttyUSB0"\n')
  s = setup(home, stdinOf('correct horse battery'))
  t.equal(await s.run('add', 'vend1', '--role', 'board', '--password-stdin'), 1)
  t.match(s.err.join(''), /board "vend1" is a \[\[boards\]\] entry/)
  t.equal(await readFile(s.file, 'utf8'), before, 'unchanged')
})

t.test('a file with wrong permissions or garbage is refused and left alone', async (t) => {
  const home = await tempDir(t)
  let s = setup(home, stdinOf('correct horse battery'))
  t.equal(await s.run('add', 'ops', '--role', 'admin', '--password-stdin'), 0)
  await chmod(s.file, 0o640)
  const before = await readFile(s.file, 'utf8')
  for (const argv of [['list'], ['add', 'ann', '--role', 'reader', '--password-stdin'], ['remove', 'ops']]) {
    s = setup(home, stdinOf('correct horse battery'))
    t.equal(await s.run(...argv), 1, argv.join(' '))
    t.match(s.err.join(''), /mode 0640 .*chmod 600/)
  }
  t.equal(await readFile(s.file, 'utf8'), before)
  t.equal((await stat(s.file)).mode & 0o777, 0o640, 'permissions untouched')

  await writeFile(s.file, 'ops:admin::$scrypt$nonsense\n', { mode: 0o600 })
  await chmod(s.file, 0o600)
  s = setup(home, stdinOf('correct horse battery'))
  t.equal(await s.run('add', 'ann', '--role', 'reader', '--password-stdin'), 1)
  t.match(s.err.join(''), /broker-accounts:1: account "ops": not a \$scrypt\$.*\(nothing changed\)/)
  t.equal(await readFile(s.file, 'utf8'), 'ops:admin::$scrypt$nonsense\n')
})

t.test('svc hub user through the real command and standard input', async (t) => {
  const home = await tempDir(t)
  const child = spawn(
    process.execPath,
    [join(root, 'bin/svc.js'), 'hub', 'user', 'add', 'esp9', '--role', 'board', '--password-stdin'],
    { env: { ...process.env, SVC_HOME: home }, stdio: ['pipe', 'pipe', 'pipe'] },
  )
  t.teardown(() => {
    if (child.exitCode === null && child.pid !== undefined) process.kill(child.pid, 'SIGKILL')
  })
  let out = ''
  child.stdout.on('data', (d: Buffer) => (out += d.toString()))
  child.stdin.end('piped password 99\n')
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
  t.equal(code, 0, out)
  t.match(out, /account "esp9" added/)
  const read = await readAccountsFile(join(home, 'data', 'broker-accounts'))
  if (!read.ok) throw new Error(read.error)
  const h = parseScryptHash(read.accounts[0]!.hash)
  t.ok(
    h.ok && (await verifyPassword(Buffer.from('piped password 99'), h.value)),
    'the piped password, newline dropped',
  )

  const err: string[] = []
  const io = { out: () => {}, err: (s: string) => void err.push(s), env: { SVC_HOME: home }, cwd: home }
  t.equal(
    await main(['hub', 'user', 'add', 'x', '--role', 'reader', '--password', 'p'], io),
    2,
    'no --password option',
  )
  t.match(err.join(''), /Unknown option '--password'/)
})
