// A socat pseudo-terminal pair: two linked ttys, as a USB serial cable would give. One end for
// the simulated board, the other for the hub.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'

export function haveSocat(): boolean {
  return spawnSync('socat', ['-V']).status === 0
}

export interface PtyPair {
  /** The board's end. */
  board: string
  /** The hub's end. */
  hub: string
  proc: ChildProcess
  /** Stops this socat (by its pid) and waits for it to exit. */
  stop(): Promise<void>
}

/** Creates `<dir>/board` and `<dir>/hub` as symlinks to the two ttys. */
export async function startPtyPair(dir: string): Promise<PtyPair> {
  const board = join(dir, 'board')
  const hub = join(dir, 'hub')
  const proc = spawn('socat', [`pty,raw,echo=0,link=${board}`, `pty,raw,echo=0,link=${hub}`], {
    stdio: 'ignore',
  })
  let spawnError: Error | undefined
  proc.once('error', (err) => (spawnError = err))
  const start = Date.now()
  while (!(existsSync(board) && existsSync(hub))) {
    if (spawnError) throw new Error(`cannot run socat: ${spawnError.message}`)
    if (proc.exitCode !== null) throw new Error(`socat exited with ${proc.exitCode}`)
    if (Date.now() - start > 10_000) {
      proc.kill('SIGTERM')
      throw new Error('socat did not create the pty pair within 10 s')
    }
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
        proc.kill('SIGTERM')
      }),
  }
}
