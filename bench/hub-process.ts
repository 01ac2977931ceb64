// A `svc hub` child process for the benches that measure the whole hub (peer, endurance): started
// the way users start it, with one SOP doing the peer work, and read from outside through /proc
// (CPU, resident memory, bytes written), so nothing in the hub is changed to be measured.
import { type ChildProcess, spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))

/** The peer work: an MQTT event `in/<n>` `{"seq":n,"v":…}`, a condition `v >= 10`, a QoS 1 publish `out/<n>`. */
export const ANSWER_SOP_TOML = `[sop]
name = "peer"
description = "in/<n> with v >= 10 answered on out/<n>"
execution_mode = "auto"
max_concurrent = 100000
agent = "none"

[[triggers]]
type = "mqtt"
topic = "in/+"
condition = "$.v >= 10"
`
export const ANSWER_SOP_MD = `# peer

## Steps

1. **Answer**
   - call: {"tool":"mqtt_publish","args":{"topic":"out/{{trigger.seq}}","payload":"{{trigger}}","qos":1}}
   - terminal: true
`

/** utime and stime, fields 14 and 15 of a `stat` file in /proc, in clock ticks (100 a second here). */
export function statCpuSec(path: string): number {
  const stat = readFileSync(path, 'utf8')
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(f[11]) + Number(f[12])) / 100
}

export const cpuSecOf = (pid: number): number => statCpuSec(`/proc/${pid}/stat`)

/** Fields of /proc/<pid>/status given in kB, in bytes (NaN for one it lacks). */
function statusBytes<K extends string>(pid: number, fields: readonly K[]): Record<K, number> {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const out = {} as Record<K, number>
  for (const f of fields)
    out[f] = Number(new RegExp(`^${f}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024
  return out
}

/** RssAnon and RssFile, in bytes: what the process holds, and file pages mapped (LevelDB maps its tables). */
export function rssPartsOf(pid: number): { anon: number; file: number } {
  const b = statusBytes(pid, ['RssAnon', 'RssFile'])
  return { anon: b.RssAnon, file: b.RssFile }
}

/** VmRSS of /proc/<pid>/status, in bytes. */
export const rssOf = (pid: number): number => statusBytes(pid, ['VmRSS']).VmRSS

export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return
  const exited = new Promise((r) => child.once('exit', r))
  process.kill(child.pid, 'SIGTERM')
  await exited
}

export function waitForLine(
  child: ChildProcess,
  test: (line: string) => boolean,
  what: string,
): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = ''
    const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}:\n${out}`)), 60_000)
    const onData = (d: Buffer): void => {
      out += d.toString()
      const line = out.split('\n').find(test)
      if (line !== undefined) {
        clearTimeout(timer)
        child.stdout?.off('data', onData)
        child.stdout?.resume()
        resolve(line)
      }
    }
    child.stdout?.on('data', onData)
    child.once('exit', (code) => reject(new Error(`${what}: exited (${code}):\n${out}`)))
  })
}

export interface HubOptions {
  /** The folder the hub's home (SVC_HOME) is made in. */
  dir: string
  clientId: string
  /** An external broker; none: the embedded broker on a port of its choosing. */
  brokerUrl?: string | null
  /** More hub.toml, appended as written (e.g. a `[history]` section). */
  toml?: string
  /** Flags for node ahead of the entry (e.g. --cpu-prof). */
  nodeArgs?: string[]
  /** A bundled entry (cli/build/dist.ts); none: cli/main.ts through tsx, as `npm run svc`. */
  entry?: string | null
  /** More environment for the hub (the unit's allocator settings, say), over the bench's own. */
  env?: Record<string, string>
}

export interface HubProcess {
  child: ChildProcess
  pid: number
  home: string
  /** <home>/data: the engine, broker and attestation stores live under it. */
  dataDir: string
  brokerUrl: string
  stop(): Promise<void>
}

/** `svc hub` with the answer SOP, its own home, the web parts off; resolves once it logs "hub started". */
export async function startHub(o: HubOptions): Promise<HubProcess> {
  const home = await mkdtemp(join(o.dir, 'svc-'))
  const sops = join(home, 'sops')
  await mkdir(join(sops, 'peer'), { recursive: true })
  await writeFile(join(sops, 'peer', 'SOP.toml'), ANSWER_SOP_TOML)
  await writeFile(join(sops, 'peer', 'SOP.md'), ANSWER_SOP_MD)
  await writeFile(
    join(home, 'hub.toml'),
    `[hub]\nsops_dir = "${sops}"\n[broker]\nclient_id = "${o.clientId}"\n${o.brokerUrl ? `url = "${o.brokerUrl}"` : 'port = 0'}\n[webhook]\nenabled = false\n[api]\nport = 0\n[console]\nenabled = false\n${o.toml ?? ''}`,
  )
  const cli = o.entry ? [o.entry] : ['--import', 'tsx', join(root, 'cli/main.ts')]
  const child = spawn(process.execPath, [...(o.nodeArgs ?? []), ...cli, 'hub'], {
    cwd: root,
    env: { ...process.env, ...o.env, SVC_HOME: home },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const line = await waitForLine(child, (l) => l.includes('"hub started"'), 'svc hub to start')
  return {
    child,
    pid: child.pid as number,
    home,
    dataDir: join(home, 'data'),
    brokerUrl: (JSON.parse(line) as { broker: string }).broker,
    stop: () => stopChild(child),
  }
}
