// A test fixture run as its own process (`node --import tsx <script> <dir>`) that writes
// `<dir>/ready` once it has reached the state a test kills it in: the crash tests' way to stop
// a real process mid-write with SIGKILL.
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import type { Test } from 'tap'
import { waitFor } from './wait.ts'

export interface ReadyChild {
  /** Whether the child has exited (before it was killed, that is a failure of the fixture). */
  exited(): boolean
  /** SIGKILL, and wait for the exit. */
  kill(): Promise<void>
}

/** Starts `script` on `dir` and waits for its `ready` file (or its exit); killed at teardown. */
export async function startReadyChild(
  t: Pick<Test, 'teardown'>,
  script: string,
  dir: string,
  what: string,
  args: readonly string[] = [],
): Promise<ReadyChild> {
  const proc = spawn(process.execPath, ['--import', 'tsx', script, dir, ...args], {
    stdio: ['ignore', 'inherit', 'inherit'],
  })
  let exited = false
  proc.on('exit', () => (exited = true))
  t.teardown(() => {
    if (!exited && proc.pid) process.kill(proc.pid, 'SIGKILL')
  })
  await waitFor(() => existsSync(join(dir, 'ready')) || exited, what, { timeoutMs: 30_000 })
  return {
    exited: () => exited,
    async kill() {
      if (!exited && proc.pid) process.kill(proc.pid, 'SIGKILL')
      await waitFor(() => exited, 'the child to die')
    },
  }
}
