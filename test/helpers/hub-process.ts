// `svc hub` as a user runs it, in a child process with SVC_HOME = home (its hub.toml, token and
// API info file there): resolves once it logged "hub started". Killed by pid (never by name)
// when the test ends; crash and soak tests SIGKILL it themselves with killHub.
import { type ChildProcess, spawn } from 'node:child_process'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Teardown } from './tmp.ts'
import { waitFor } from './wait.ts'

const root = fileURLToPath(new URL('../..', import.meta.url))

export interface HubChild {
  pid: number
  proc: ChildProcess
  /** Resolves with the signal that ended it (null for a clean exit). */
  exited: Promise<NodeJS.Signals | null>
  /** stdout and stderr so far (the last 256 KiB): the hub's JSON log lines. */
  out(): string
  /** SIGTERM, and wait for it to exit. */
  stop(): Promise<void>
}

export async function startHubChild(
  t: Teardown,
  home: string,
  opts: {
    env?: NodeJS.ProcessEnv
    logLevel?: string
    /** A program that execs the hub, and its arguments (the hub's command line follows). */
    launcher?: string[]
  } = {},
): Promise<HubChild> {
  // At info whatever hub.toml says (crash tests keep their hubs quiet there): "hub started" is
  // how the start is seen.
  const args = ['--import', 'tsx', join(root, 'cli/main.ts'), 'hub', '--log-level', opts.logLevel ?? 'info']
  const [file, ...argv] = [...(opts.launcher ?? []), process.execPath, ...args] as [string, ...string[]]
  const proc = spawn(file, argv, {
    cwd: root,
    env: { ...process.env, ...opts.env, SVC_HOME: home },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const pid = proc.pid as number
  const exited = new Promise<NodeJS.Signals | null>((r) => proc.once('exit', (_c, s) => r(s)))
  const running = () => proc.exitCode === null && proc.signalCode === null
  t.teardown(async () => {
    if (running()) {
      process.kill(pid, 'SIGKILL')
      await exited
    }
  })
  let out = ''
  const keep = (d: Buffer) => {
    out += d.toString()
    if (out.length > 256 * 1024) out = out.slice(-128 * 1024)
  }
  proc.stdout!.on('data', keep)
  proc.stderr!.on('data', keep)
  await waitFor(
    () => {
      if (proc.exitCode !== null) throw new Error(`hub exited early (${proc.exitCode}): ${out}`)
      return out.includes('"hub started"')
    },
    'the hub to start',
    { timeoutMs: 60_000 },
  )
  return {
    pid,
    proc,
    exited,
    out: () => out,
    stop: async () => {
      if (running()) process.kill(pid, 'SIGTERM')
      await exited
    },
  }
}

/** SIGKILL by pid, and wait until it is gone. */
export async function killHub(hub: HubChild): Promise<void> {
  process.kill(hub.pid, 'SIGKILL')
  await hub.exited
}
