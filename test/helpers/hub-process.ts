// `svc hub` as users start it, a child process on `home` (SVC_HOME), resolved once it logs
// "hub started"; SIGKILLed (by pid) when the test ends if still running.
import { type ChildProcess, spawn } from 'node:child_process'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Test } from 'tap'
import { waitFor } from './wait.ts'

const root = fileURLToPath(new URL('../..', import.meta.url))

export interface HubChild {
  proc: ChildProcess
  exited: Promise<unknown>
}

export async function startHubChild(t: Test, home: string): Promise<HubChild> {
  const proc = spawn(
    process.execPath,
    ['--import', 'tsx', join(root, 'hub/cli/main.ts'), 'hub', '--log-level', 'info'],
    { cwd: root, env: { ...process.env, SVC_HOME: home }, stdio: ['ignore', 'pipe', 'pipe'] },
  )
  const exited = new Promise((r) => proc.once('exit', r))
  t.teardown(async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      process.kill(proc.pid as number, 'SIGKILL')
      await exited
    }
  })
  let out = ''
  proc.stdout!.on('data', (d: Buffer) => {
    if (!out.includes('"hub started"')) out += d.toString()
  })
  proc.stderr!.on('data', (d: Buffer) => (out += d.toString()))
  await waitFor(
    () => {
      if (proc.exitCode !== null) throw new Error(`hub exited early (${proc.exitCode}): ${out}`)
      return out.includes('"hub started"')
    },
    'the hub to start',
    { timeoutMs: 60_000 },
  )
  return { proc, exited }
}
