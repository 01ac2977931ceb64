// A real `node bin/svc.js …` child for the start tests, stopped by pid at teardown.
import { type ChildProcess, spawn } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

export const root = fileURLToPath(new URL('../../', import.meta.url))
const bin = join(root, 'bin', 'svc.js')

export interface Child {
  proc: ChildProcess
  out: () => string
  err: () => string
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  waitFor(re: RegExp, ms: number): Promise<RegExpExecArray>
}

export function startChild(
  t: { teardown(fn: () => unknown): void },
  args: string[],
  env: NodeJS.ProcessEnv,
): Child {
  const proc = spawn(process.execPath, [bin, ...args], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  let err = ''
  proc.stdout!.on('data', (d: Buffer) => (out += d.toString()))
  proc.stderr!.on('data', (d: Buffer) => (err += d.toString()))
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.once('exit', (code, signal) => resolve({ code, signal })),
  )
  // Whatever happens in the test, the child (and, through its handler, anvil) is stopped by pid.
  t.teardown(async () => {
    if (proc.exitCode === null && proc.signalCode === null && proc.pid !== undefined) {
      process.kill(proc.pid, 'SIGTERM')
      const timer = setTimeout(() => proc.pid !== undefined && process.kill(proc.pid, 'SIGKILL'), 30_000)
      await exited
      clearTimeout(timer)
    }
  })
  return {
    proc,
    out: () => out,
    err: () => err,
    exited,
    waitFor: (re, ms) =>
      new Promise((resolve, reject) => {
        const check = (): void => {
          const m = re.exec(out)
          if (m) {
            clearInterval(iv)
            clearTimeout(to)
            resolve(m)
          }
        }
        const iv = setInterval(check, 200)
        const to = setTimeout(() => {
          clearInterval(iv)
          reject(new Error(`no ${re} within ${ms} ms\nstdout:\n${out}\nstderr:\n${err}`))
        }, ms)
        proc.once('exit', () => {
          check()
          clearInterval(iv)
          clearTimeout(to)
          reject(new Error(`svc start exited before ${re}\nstdout:\n${out}\nstderr:\n${err}`))
        })
        check()
      }),
  }
}

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** Pids of running anvil processes listening on `port` (read from /proc). */
export function anvilsOnPort(port: number): number[] {
  const out: number[] = []
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue
    try {
      const argv = readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0')
      const i = argv.indexOf('--port')
      if (argv[0]?.endsWith('anvil') && i >= 0 && argv[i + 1] === String(port)) out.push(Number(d))
    } catch {
      // gone meanwhile
    }
  }
  return out
}
