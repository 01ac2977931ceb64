// The hub bundled by `npm run build` (cli/build/dist.ts, esbuild) and run by bare `node`, the way
// the systemd unit runs it: it starts, a board event on the embedded broker starts a SOP whose
// step publishes back over MQTT, the simulated board (the bridge, a lazily loaded chunk) comes
// online, and SIGTERM stops it with exit 0. Guards the build: a lazy import the bundle cannot
// resolve, or a package that breaks when bundled, fails here.
import t from 'tap'
import { spawn } from 'node:child_process'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import mqtt from 'mqtt'
import { loadNativeSecp256k1 } from '../../hub/attest/native-secp256k1.ts'
import { buildDist } from '../../cli/build/dist.ts'
import { tempDir } from '../helpers/tmp.ts'
import { waitFor } from '../helpers/wait.ts'

t.test(
  'node dist/main.js hub: runs a SOP from a board event and stops on SIGTERM',
  { timeout: 120_000 },
  async (t) => {
    const dir = await tempDir(t, 'svc-dist-')
    const built = await buildDist(join(dir, 'dist'))
    if (!built.ok) throw new Error(built.error)

    const home = join(dir, 'home')
    /** A one-step deterministic SOP: its trigger (TOML lines), its step's title and the tool call. */
    const writeSop = async (name: string, trigger: string, title: string, call: object): Promise<void> => {
      await mkdir(join(home, 'sops', name), { recursive: true })
      await writeFile(
        join(home, 'sops', name, 'SOP.toml'),
        `[sop]\nname = "${name}"\ndescription = "d"\nexecution_mode = "deterministic"\nmax_concurrent = 8\nagent = "a"\n\n[[triggers]]\n${trigger}\n`,
      )
      await writeFile(
        join(home, 'sops', name, 'SOP.md'),
        `# ${name}\n\n## Steps\n\n1. **${title}**\n   - call: ${JSON.stringify(call)}\n   - terminal: true\n`,
      )
    }
    await writeSop(
      'echo',
      'type = "peripheral"\nboard = "b1"\nsignal = "s1"\ncondition = "$.amount >= 1"',
      'Echo',
      { tool: 'mqtt_publish', args: { topic: 'out/echo', payload: { done: true }, qos: 1 } },
    )
    // A SOP that attests: the attestation chunk loads (with its native signer, loaded by require
    // from node_modules outside the bundle) and stores the line, waiting for a [chain] to sync to.
    await writeSop('vend', 'type = "mqtt"\ntopic = "vend/done"', 'Attest', {
      tool: 'chain_attest',
      args: { action: 'vend', request_uri: 'svc://o/1', params: { slot: 3 } },
    })
    await writeFile(
      join(home, 'hub.toml'),
      '[broker]\nport = 0\n[webhook]\nport = 0\n[api]\nport = 0\n[console]\nport = 0\n',
    )
    // No --import tsx, no NODE_OPTIONS from the test runner: bare node, as in production.
    const env: NodeJS.ProcessEnv = { ...process.env, SVC_HOME: home }
    delete env.NODE_OPTIONS
    const child = spawn(
      process.execPath,
      [built.entry, 'hub', '--simulate', 'sim1', '--log-level', 'debug'],
      {
        cwd: dir,
        env,
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
    const started = await new Promise<{ broker: string; api: string }>((resolve, reject) => {
      child.stdout.on('data', (d: Buffer) => {
        stdout += d.toString()
        for (const line of stdout.split('\n'))
          if (line.includes('"hub started"')) resolve(JSON.parse(line) as { broker: string; api: string })
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
    await c.publishAsync('vend/done', '{}', { qos: 1 })
    t.same(JSON.parse(got.get('out/echo') as string), { done: true }, 'the SOP step ran and published')
    t.equal(
      got.get('boards/sim1/availability'),
      'online',
      'the simulated board came up through the compiled bridge',
    )
    await c.endAsync()
    const deviceLine = stdout.split('\n').find((l) => l.includes('"device key loaded"'))
    t.ok(deviceLine, 'the attestation chunk loaded')
    const native = loadNativeSecp256k1()
    t.equal(
      JSON.parse(deviceLine ?? '{}').signer,
      native.ok ? 'libsecp256k1' : 'noble',
      'the bundle signs the way the sources do',
    )
    // The line is attested (stored) before the run completes; wait for that run through the API token.
    const token = (await readFile(join(home, 'hub.token'), 'utf8')).trim()
    let lines = 0
    await waitFor(
      async () => {
        const r = (await (
          await fetch(`${started.api}/attest/status`, { headers: { authorization: `Bearer ${token}` } })
        ).json()) as { total: number }
        lines = r.total
        return lines >= 1
      },
      'the attested line in /attest/status',
      { intervalMs: 50 },
    )
    t.equal(lines, 1, 'chain_attest stored one line, read through the bundled local API')

    const code = await new Promise<number | null>((resolve) => {
      child.on('exit', (code) => resolve(code))
      process.kill(pid, 'SIGTERM')
    })
    t.equal(code, 0)
    t.match(stdout, /"hub stopped"/)
    const admitted = stdout.split('\n').filter((l) => l.includes('"trigger admitted"'))
    t.equal(
      admitted.filter((l) => l.includes('"echo"')).length,
      1,
      'the event below the condition started nothing; the other started one run',
    )
    t.equal(stderr.replace(/npm warn.*\n/g, ''), '', 'nothing on stderr')
  },
)
