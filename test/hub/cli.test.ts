// `svc hub` as a user runs it: a real process, stopped by SIGTERM (by pid), exiting 0.
import t from 'tap'
import { waitFor } from '../helpers/wait.ts'
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { access, mkdir, readFile, writeFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import mqtt from 'mqtt'
import { svcCli } from '../helpers/cli.ts'
import { tempDir } from '../helpers/tmp.ts'

const root = fileURLToPath(new URL('../..', import.meta.url))

t.test('svc hub config prints the effective config; bad config and usage are one-line errors', async (t) => {
  const home = await tempDir(t)
  const svc = svcCli({ SVC_HOME: home }, root)
  let r = await svc('hub', 'config', '--json')
  t.equal(r.code, 0)
  const shown = JSON.parse(r.out) as { broker: { port: number }; hub: { sops_dir: string } }
  t.equal(shown.broker.port, 1883)
  t.equal(shown.hub.sops_dir, join(home, 'sops'))

  await writeFile(join(home, 'bad.toml'), '[broker]\nport = -1\npassword = "secret"\n')
  r = await svc('hub', 'config', '--config', join(home, 'bad.toml'))
  t.equal(r.code, 1)
  t.match(r.err, /^svc hub: .*bad\.toml: broker\.port: must be >= 0/)

  await writeFile(join(home, 'ok.toml'), '[broker]\npassword = "secret"\n')
  r = await svc('hub', 'config', '--config', join(home, 'ok.toml'))
  t.equal(r.code, 0)
  t.notMatch(r.out, /secret/, 'the broker password is not printed')

  r = await svc('hub', 'frobnicate')
  t.equal(r.code, 2)
  t.match(r.err, /unknown subcommand "frobnicate"/)
  r = await svc('hub', '--simulate', 'a/b', 'config')
  t.equal(r.code, 2)
  t.match(r.err, /--simulate: board name "a\/b"/)
  r = await svc('hub', '--bogus')
  t.equal(r.code, 2)
})

t.test('svc hub runs, takes MQTT, and stops cleanly on SIGTERM', async (t) => {
  const home = await tempDir(t)
  await mkdir(join(home, 'sops', 'inbox'), { recursive: true })
  await writeFile(
    join(home, 'sops', 'inbox', 'SOP.toml'),
    '[sop]\nname = "inbox"\ndescription = "d"\nexecution_mode = "deterministic"\nmax_concurrent = 8\nagent = "a"\n\n[[triggers]]\ntype = "channel"\nchannel = "orders"\n\n[[triggers]]\ntype = "webhook"\npath = "/hooks/order"\n',
  )
  await writeFile(
    join(home, 'sops', 'inbox', 'SOP.md'),
    '# inbox\n\n## Steps\n\n1. **Pause**\n   - call: {"tool":"wait","args":{"ms":1}}\n',
  )
  await writeFile(
    join(home, 'hub.toml'),
    '[broker]\nport = 0\n[webhook]\nport = 0\n[api]\nport = 0\n[console]\nport = 0\n',
  )
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', join(root, 'cli/main.ts'), 'hub', '--simulate', 'sim1'],
    {
      cwd: root,
      env: { ...process.env, SVC_HOME: home },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  )
  const pid = child.pid as number
  t.teardown(() => {
    if (child.exitCode === null) process.kill(pid, 'SIGKILL')
  })
  let stdout = ''
  let stderr = ''
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
  const started = await new Promise<{ broker: string; webhook: string; api: string }>((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString()
      for (const line of stdout.split('\n')) {
        if (line.includes('"hub started"'))
          resolve(JSON.parse(line) as { broker: string; webhook: string; api: string })
      }
    })
    child.on('exit', (code) => reject(new Error(`hub exited early (${code}): ${stderr}${stdout}`)))
  })
  const c = await mqtt.connectAsync(started.broker, { reconnectPeriod: 0 })
  // Listening before subscribing: the retained availability can arrive with the SUBACK. It may
  // still read `offline` (reset at start) until the board's hello has come.
  const online = new Promise<string>((resolve) =>
    c.on('message', (_t, p) => p.toString() === 'online' && resolve('online')),
  )
  await c.subscribeAsync('boards/sim1/availability', { qos: 1 })
  t.equal(await online, 'online', 'the simulated board announced itself on the embedded broker')
  await c.endAsync()

  // The webhook gateway answers with the run id; the local API (token from the 0600 file) takes channel posts.
  const hook = await fetch(`${started.webhook}/hooks/order`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{"sku":"A1"}',
  })
  t.equal(hook.status, 202)
  t.match(await hook.json(), { outcome: 'started', runId: /^[0-9a-f-]{36}$/ })
  const info = JSON.parse(await readFile(join(home, 'hub-api.json'), 'utf8')) as { url: string }
  t.equal(info.url, started.api)
  const token = (await readFile(join(home, 'hub.token'), 'utf8')).trim()
  const post = (name: string, auth = `Bearer ${token}`) =>
    fetch(`${info.url}/channels/${name}`, {
      method: 'POST',
      headers: { authorization: auth, 'content-type': 'application/json' },
      body: '{"n":1}',
    })
  t.equal((await post('orders', 'Bearer nope')).status, 401)
  const ch = await post('orders')
  t.equal(ch.status, 200)
  t.match(await ch.json(), { channel: 'orders', runs: [{ sop: 'inbox', outcome: 'started' }] })
  t.equal((await post('nobody')).status, 404)

  // The console line: its URL and a one-time link that signs in; the token is in no log line.
  await waitFor(() => /^console {2}http/m.test(stdout), 'the console line')
  const m = /^console {2}(http\S+) {2}\(sign in once with (\S+) ;/m.exec(stdout)
  t.ok(m, 'svc hub prints the console URL and a sign-in link')
  const link = m![2]!
  const linkToken = link.split('#token=')[1]!
  t.equal(
    stdout.split('\n').filter((l) => l.includes(linkToken)).length,
    1,
    'the token is printed once, on the console line only',
  )
  const signIn = await fetch(`${m![1]}/login/link`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: m![1]! },
    body: JSON.stringify({ token: linkToken }),
  })
  t.equal(signIn.status, 200, 'the link signs in')

  const code = await new Promise<number | null>((resolve) => {
    child.on('exit', (code) => resolve(code))
    process.kill(pid, 'SIGTERM')
  })
  t.equal(code, 0)
  t.match(stdout, /"hub stopped"/)
  t.notMatch(stdout, /Database is not open/)
  await t.rejects(access(join(home, 'hub-api.json')), 'the API info file is removed on stop')
  t.equal(stderr.replace(/npm warn.*\n/g, ''), '', 'nothing on stderr')
})
