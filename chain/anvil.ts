// Starts anvil (from the npm package @foundry-rs/anvil) on loopback with chain id 10143 and
// stops it by pid. We spawn the platform binary itself rather than the package's node wrapper,
// so the pid we hold is anvil's and killing it cannot leave an orphan behind a wrapper.
import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { CHAIN_ID } from './chain-id.ts'

export interface Anvil {
  rpcUrl: string
  port: number
  pid: number
  stop(): Promise<void>
}

export interface AnvilOptions {
  /** 0 or absent: the kernel picks a free port and anvil reports it. */
  port?: number
  host?: string
  /** Seconds per block; absent: mine each transaction at once (automine). */
  blockTime?: number
  /** Give up waiting for "Listening on" after this many ms. */
  startTimeoutMs?: number
  /**
   * Keep the chain in this file (anvil --state): loaded at start when it exists, written every
   * STATE_INTERVAL_S seconds and on stop, so a restart keeps every block, receipt and row.
   */
  stateFile?: string
  /** Another chain id than 10143: only for tests of what svc refuses. */
  chainId?: number
}

/** How often a kept chain is written: a kill -9 loses at most this many seconds of it. */
export const STATE_INTERVAL_S = 2

export function anvilBinary(): string {
  const require = createRequire(import.meta.url)
  const arch = process.arch === 'x64' ? 'amd64' : process.arch
  try {
    const p = require.resolve(`@foundry-rs/anvil-${process.platform}-${arch}/bin/anvil`)
    if (existsSync(p)) return p
  } catch {
    // fall back to the wrapper's dist/ layout below
  }
  const root = join(dirname(fileURLToPath(import.meta.url)), '..', 'node_modules', '@foundry-rs', 'anvil')
  const dist = join(root, 'dist', 'anvil')
  if (existsSync(dist)) return dist
  throw new Error(`no anvil binary for ${process.platform}-${process.arch}; is @foundry-rs/anvil installed?`)
}

const live = new Set<ChildProcess>()
process.once('exit', () => {
  // A test that crashes must not leave anvil running: kill what this process started.
  for (const c of live) if (c.pid !== undefined) tryKill(c.pid, 'SIGKILL')
})

function tryKill(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig)
  } catch {
    // already gone
  }
}

/** Recent block states anvil keeps in memory (none on disk). */
export const KEPT_STATES = 16

export function startAnvil(opts: AnvilOptions = {}): Promise<Anvil> {
  const host = opts.host ?? '127.0.0.1'
  // --prune-history: without it anvil writes every old block's whole state under
  // ~/.foundry/anvil/tmp, gigabytes per run once a registry holds thousands of rows, and
  // leaves the folder behind when it is killed. Nothing here reads state at a past block, but
  // anvil itself does: it resolves `latest` to a number, and with no count kept only the newest
  // state, so a read racing the next block failed with BlockOutOfRangeError. A few recent states
  // in memory close that window.
  const args = [
    '--chain-id',
    String(opts.chainId ?? CHAIN_ID),
    '--host',
    host,
    '--port',
    String(opts.port ?? 0),
    '--prune-history',
    String(KEPT_STATES),
  ]
  if (opts.blockTime !== undefined) args.push('--block-time', String(opts.blockTime))
  if (opts.stateFile !== undefined)
    args.push('--state', opts.stateFile, '--state-interval', String(STATE_INTERVAL_S))
  const child = spawn(anvilBinary(), args, { stdio: ['ignore', 'pipe', 'pipe'] })
  live.add(child)
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  exited.then(() => live.delete(child))

  return new Promise<Anvil>((resolve, reject) => {
    let out = ''
    let ready = false
    const timer = setTimeout(
      () => fail(new Error(`anvil did not start within ${opts.startTimeoutMs ?? 20000} ms:\n${out}`)),
      opts.startTimeoutMs ?? 20000,
    )
    function fail(err: Error): void {
      clearTimeout(timer)
      if (child.pid !== undefined) tryKill(child.pid, 'SIGKILL')
      reject(err)
    }
    // Anvil logs every transaction: keep draining both pipes or it blocks when they fill.
    child.stderr?.on('data', (d: Buffer) => {
      if (!ready) out += d.toString()
    })
    child.stdout?.on('data', (d: Buffer) => {
      if (ready) return
      out += d.toString()
      const m = /Listening on ([^\s]+):(\d+)/.exec(out)
      if (!m || child.pid === undefined) return
      ready = true
      clearTimeout(timer)
      const port = Number(m[2])
      const pid = child.pid
      resolve({
        rpcUrl: `http://${host}:${port}`,
        port,
        pid,
        stop: async () => {
          if (child.exitCode !== null || child.signalCode !== null) return
          tryKill(pid, 'SIGTERM')
          const t = setTimeout(() => tryKill(pid, 'SIGKILL'), 3000)
          await exited
          clearTimeout(t)
        },
      })
    })
    child.once('error', (err) => fail(err))
    child.once('exit', (code, sig) => {
      if (!ready) fail(new Error(`anvil exited (${code ?? sig}) before listening:\n${out}`))
    })
  })
}
