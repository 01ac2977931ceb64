// `svc hub` as a user runs it, in a child process with SVC_HOME = home (its hub.toml, token and
// API info file there): resolves once it logged "hub started". Killed (by pid) when the test ends.
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Teardown } from './tmp.ts'
import { waitFor } from './wait.ts'

const root = fileURLToPath(new URL('../..', import.meta.url))

export interface HubChild {
  pid: number
  /** Resolves with the signal that ended it (null for a clean exit). */
  exited: Promise<NodeJS.Signals | null>
  out(): string
  /** SIGTERM, and wait for it to exit. */
  stop(): Promise<void>
}

export async function startHubChild(
  t: Teardown,
  home: string,
  env: NodeJS.ProcessEnv = {},
): Promise<HubChild> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'hub/cli/main.ts'), 'hub'], {
    cwd: root,
    env: { ...process.env, ...env, SVC_HOME: home },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const pid = child.pid as number
  const exited = new Promise<NodeJS.Signals | null>((r) => child.once('exit', (_c, s) => r(s)))
  const running = () => child.exitCode === null && child.signalCode === null
  t.teardown(async () => {
    if (running()) {
      process.kill(pid, 'SIGKILL')
      await exited
    }
  })
  let out = ''
  let err = ''
  child.stderr.on('data', (d: Buffer) => (err += d.toString()))
  child.stdout.on('data', (d: Buffer) => (out += d.toString()))
  await waitFor(
    () => {
      if (child.exitCode !== null) throw new Error(`hub exited early (${child.exitCode}): ${err}${out}`)
      return out.includes('"hub started"')
    },
    'the hub to start',
    { timeoutMs: 60_000 },
  )
  return {
    pid,
    exited,
    out: () => out,
    stop: async () => {
      if (running()) process.kill(pid, 'SIGTERM')
      await exited
    },
  }
}
