// A socat pseudo-terminal pair: two linked ttys, as a USB serial cable would give.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'

export const haveSocat = spawnSync('socat', ['-V']).status === 0
export const noSocat = haveSocat ? false : 'socat is not installed (apt-get install socat): the pseudo-terminal test needs it'

export interface PtyPair {
  board: string
  hub: string
  proc: ChildProcess
  stop(): Promise<void>
}

export async function startPtyPair(dir: string): Promise<PtyPair> {
  const board = join(dir, 'board')
  const hub = join(dir, 'hub')
  const proc = spawn('socat', [`pty,raw,echo=0,link=${board}`, `pty,raw,echo=0,link=${hub}`], { stdio: 'ignore' })
  const start = Date.now()
  while (!(existsSync(board) && existsSync(hub))) {
    if (proc.exitCode !== null) throw new Error(`socat exited with ${proc.exitCode}`)
    if (Date.now() - start > 10_000) throw new Error('socat did not create the pty pair')
    await new Promise((r) => setTimeout(r, 10))
  }
  return {
    board,
    hub,
    proc,
    stop: () =>
      new Promise<void>((resolve) => {
        if (proc.exitCode !== null || proc.signalCode !== null) return resolve()
        proc.once('exit', () => resolve())
        proc.kill('SIGTERM') // this pid only: the socat we started
      }),
  }
}
