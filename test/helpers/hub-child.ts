// `svc hub` as the CLI runs it, in a child process on a given SVC_HOME: started, waited for
// until it logs "hub started", SIGKILLed by pid (never by name). For crash and soak tests.
import { type ChildProcess, spawn } from 'node:child_process'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Teardown } from './tmp.ts'
import { waitFor } from './wait.ts'

const root = fileURLToPath(new URL('../..', import.meta.url))

export interface HubChild {
  proc: ChildProcess
  exited: Promise<unknown>
  /** stdout and stderr so far (the last 256 KiB): the hub's JSON log lines. */
  output(): string
}

export async function startHubChild(
  t: Teardown,
  home: string,
  opts: { env?: NodeJS.ProcessEnv; logLevel?: string } = {},
): Promise<HubChild> {
  const proc = spawn(
    process.execPath,
    ['--import', 'tsx', join(root, 'hub/cli/main.ts'), 'hub', '--log-level', opts.logLevel ?? 'info'],
    { cwd: root, env: { ...process.env, ...opts.env, SVC_HOME: home }, stdio: ['ignore', 'pipe', 'pipe'] },
  )
  const exited = new Promise((r) => proc.once('exit', r))
  t.teardown(async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      process.kill(proc.pid as number, 'SIGKILL')
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
  return { proc, exited, output: () => out }
}

/** SIGKILL by pid, and wait until it is gone. */
export async function killHub(hub: HubChild): Promise<void> {
  process.kill(hub.proc.pid as number, 'SIGKILL')
  await hub.exited
}
