// The hub built to plain JavaScript (tsconfig.build.json) and run by bare `node`, the way the
// systemd unit runs it: it starts, a board event on the embedded broker starts a SOP whose step
// publishes back over MQTT, the simulated board (bridge loaded lazily) comes online, and SIGTERM
// stops it with exit 0. Guards the build: a `.ts` import left unrewritten, or a lazy import the compiled tree cannot resolve fails here.
import t from 'tap'
import { spawn } from 'node:child_process'
import { access, mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import mqtt from 'mqtt'
import { buildDist } from '../../hub/build/dist.ts'
import { tempDir } from '../helpers/tmp.ts'

t.test('node dist/hub/cli/main.js hub: runs a SOP from a board event and stops on SIGTERM', { timeout: 120_000 }, async (t) => {
  const dir = await tempDir(t, 'svc-dist-')
  const built = await buildDist(join(dir, 'dist'))
  if (!built.ok) throw new Error(built.error)

  const home = join(dir, 'home')
  await mkdir(join(home, 'sops', 'echo'), { recursive: true })
  await writeFile(
    join(home, 'sops', 'echo', 'SOP.toml'),
    '[sop]\nname = "echo"\ndescription = "d"\nexecution_mode = "deterministic"\nmax_concurrent = 8\nagent = "a"\n\n[[triggers]]\ntype = "peripheral"\nboard = "b1"\nsignal = "s1"\ncondition = "$.amount >= 1"\n',
  )
  await writeFile(
    join(home, 'sops', 'echo', 'SOP.md'),
    '# echo\n\n## Steps\n\n1. **Echo** — tell the line.\n   - call: {"tool":"mqtt_publish","args":{"topic":"out/echo","payload":{"done":true},"qos":1}}\n   - terminal: true\n',
  )
  await writeFile(join(home, 'hub.toml'), '[broker]\nport = 0\n[webhook]\nport = 0\n[api]\nport = 0\n')
  // No --import tsx, no NODE_OPTIONS from the test runner: bare node, as in production.
  const env: NodeJS.ProcessEnv = { ...process.env, SVC_HOME: home }
  delete env.NODE_OPTIONS
  const child = spawn(process.execPath, [built.entry, 'hub', '--simulate', 'sim1'], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] })
  const pid = child.pid as number
  t.teardown(() => {
    if (child.exitCode === null) process.kill(pid, 'SIGKILL')
  })
  let stdout = ''
  let stderr = ''
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
  const started = await new Promise<{ broker: string; api: string }>((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString()
      for (const line of stdout.split('\n')) if (line.includes('"hub started"')) resolve(JSON.parse(line) as { broker: string; api: string })
    })
    child.on('exit', (code) => reject(new Error(`compiled hub exited early (${code}): ${stderr}${stdout}`)))
  })
  t.match(started.api, /^http:\/\/127\.0\.0\.1:\d+$/, 'the local API (lazily imported) listens')

  const c = await mqtt.connectAsync(started.broker, { reconnectPeriod: 0 })
  // Listening before subscribing: the retained availability can arrive with the SUBACK.
  const got = new Map<string, string>()
  const both = new Promise<void>((resolve) =>
    c.on('message', (topic, p) => {
      got.set(topic, p.toString())
      if (got.has('out/echo') && got.has('boards/sim1/availability')) resolve()
    }),
  )
  await c.subscribeAsync(['out/echo', 'boards/sim1/availability'], { qos: 1 })
  await c.publishAsync('boards/b1/s1', '{"amount":0}', { qos: 1 })
  await c.publishAsync('boards/b1/s1', '{"amount":2}', { qos: 1 })
  await both
  t.same(JSON.parse(got.get('out/echo') as string), { done: true }, 'the SOP step ran and published')
  t.equal(got.get('boards/sim1/availability'), 'online', 'the simulated board came up through the compiled bridge')
  await c.endAsync()

  const code = await new Promise<number | null>((resolve) => {
    child.on('exit', (code) => resolve(code))
    process.kill(pid, 'SIGTERM')
  })
  t.equal(code, 0)
  t.match(stdout, /"hub stopped"/)
  const admitted = stdout.split('\n').filter((l) => l.includes('"trigger admitted"'))
  t.equal(admitted.length, 1, 'the event below the condition started nothing; the other started one run')
  t.equal(stderr.replace(/npm warn.*\n/g, ''), '', 'nothing on stderr')
})
