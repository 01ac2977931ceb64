// An emulated Arduino Uno for tests and benches: the companion sketch built for an ATmega328P
// (../uno-build.ts), run in simavr by uno_harness.c with UART0 on a pseudo-terminal. The hub's
// bridge opens `link` like a USB serial port; the control channel drives the pins. With `boot`,
// optiboot (./optiboot.ts) sits in the boot section and avrdude can flash the board through it,
// its reset line pulsed by the control channel or by SIGUSR1 (`resetArgv`).
import { type ChildProcessWithoutNullStreams, execFile, spawn, spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import type { Failure } from '../../../errors/codes.ts'
import { toolFailure, unoToolsMissing } from '../uno-build.ts'

const HARNESS_SRC = join(dirname(fileURLToPath(import.meta.url)), 'uno_harness.c')
const SIMAVR_INCLUDE = '/usr/include/simavr'

/** Why the emulated Uno cannot run here, or false when the compilers, core and simavr are installed. */
export function emulatedUnoMissing(): string | false {
  const tools = unoToolsMissing()
  if (tools) return tools
  if (spawnSync('gcc', ['--version']).status !== 0) return 'gcc is not installed (apt-get install gcc)'
  if (!existsSync(join(SIMAVR_INCLUDE, 'parts', 'uart_pty.h')))
    return 'simavr headers are missing (apt-get install simavr libsimavr-dev libsimavrparts1)'
  return false
}

/**
 * Compiles uno_harness.c against libsimavr; the error carries gcc's message. Our own source that
 * does not build where emulatedUnoMissing() found everything is `INTERNAL`.
 */
export async function buildHarness(outDir: string): Promise<{ ok: true; exe: string } | Failure> {
  const exe = join(outDir, 'uno_harness')
  try {
    await promisify(execFile)('gcc', [
      '-O2',
      '-Wall',
      '-I',
      SIMAVR_INCLUDE,
      '-o',
      exe,
      HARNESS_SRC,
      '-lsimavrparts',
      '-lsimavr',
      '-lpthread',
      '-lutil',
    ])
    return { ok: true, exe }
  } catch (err) {
    return toolFailure('uno_harness: ', err, 'INTERNAL')
  }
}

export interface EmulatedUno {
  pid: number
  /** The pseudo-terminal simavr made for UART0. */
  pty: string
  /** Sends one control line and resolves with the answer that starts with `expect` (without "@ "). */
  ask(line: string, expect: string): Promise<string>
  /** Writes a control line without waiting for its answer (for timing: the write is the start). */
  tell(line: string): void
  /** Every unprompted `halted …` notice so far. */
  halts: string[]
  /** Pulses RESET (EXTRF set, so optiboot listens) and resolves once the MCU restarted. */
  reset(): Promise<void>
  /** A command that pulses RESET from outside (SIGUSR1): a flash profile's `reset.argv`. */
  resetArgv: string[]
  /** Every reset done by SIGUSR1 so far (the harness reports each). */
  signalResets(): number
  /** The whole flash as the MCU holds it now (32 KB), written through `path`. */
  dumpFlash(path: string): Promise<Uint8Array>
  /** SIGSTOP: the process (and so the MCU and its UART) freezes with the pty still open. */
  freeze(): void
  thaw(): void
  /** SIGKILL and wait for the exit: the pty's master closes, as when a USB cable is pulled. */
  kill(): Promise<void>
  exited: Promise<void>
}

export interface StartOptions {
  harness: string
  /** The sketch: its ELF, or an Intel HEX image. */
  elf: string
  /** A bootloader (Intel HEX, e.g. optiboot): loaded at its address, and every reset starts there. */
  boot?: string
  /** A symlink to the pty, kept across restarts so the hub's config names one path. */
  link: string
  /** Hold the MCU until `run`, so the port can be opened before the sketch says hello. */
  paused?: boolean
}

export async function startEmulatedUno(o: StartOptions): Promise<EmulatedUno> {
  const args = [
    o.elf,
    '--link',
    o.link,
    ...(o.boot ? ['--boot', o.boot] : []),
    ...(o.paused ? ['--paused'] : []),
  ]
  const proc: ChildProcessWithoutNullStreams = spawn(o.harness, args, { stdio: ['pipe', 'pipe', 'pipe'] })
  let stderr = ''
  proc.stderr.on('data', (b: Buffer) => {
    stderr += b.toString('utf8')
  })
  const halts: string[] = []
  let signalResets = 0
  const waiting: Array<{ expect: string; resolve: (s: string) => void }> = []
  let onPty: ((s: string) => void) | undefined
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()))
  createInterface({ input: proc.stdout }).on('line', (line) => {
    // simavr's own notices share stdout; ours start with "@ ".
    if (!line.startsWith('@ ')) return
    const msg = line.slice(2)
    if (msg.startsWith('halted ')) halts.push(msg)
    if (msg === 'reset signal') {
      signalResets++
      return
    }
    if (msg.startsWith('pty ')) return onPty?.(msg.slice(4))
    const i = waiting.findIndex((w) => msg.startsWith(w.expect))
    if (i >= 0) waiting.splice(i, 1)[0]!.resolve(msg)
  })
  const pty = await new Promise<string>((resolve, reject) => {
    onPty = resolve
    proc.once('error', reject)
    void exited.then(() => reject(new Error(`uno_harness exited before its pty was ready: ${stderr.trim()}`)))
  })
  const ask = (line: string, expect: string): Promise<string> =>
    new Promise((resolve, reject) => {
      if (proc.exitCode !== null || proc.signalCode !== null)
        return reject(new Error('uno_harness has exited'))
      waiting.push({ expect, resolve })
      proc.stdin.write(`${line}\n`)
    })
  return {
    pid: proc.pid!,
    pty,
    halts,
    exited,
    ask,
    async reset() {
      await ask('reset', 'reset')
    },
    resetArgv: ['kill', '-USR1', String(proc.pid)],
    signalResets: () => signalResets,
    async dumpFlash(path) {
      const answer = await ask(`dump ${path}`, 'dump')
      if (answer.startsWith('dump error')) throw new Error(`uno_harness: ${answer}`)
      return new Uint8Array(await readFile(path))
    },
    tell(line) {
      proc.stdin.write(`${line}\n`)
    },
    freeze: () => process.kill(proc.pid!, 'SIGSTOP'),
    thaw: () => process.kill(proc.pid!, 'SIGCONT'),
    async kill() {
      if (proc.exitCode === null && proc.signalCode === null) {
        process.kill(proc.pid!, 'SIGCONT')
        proc.kill('SIGKILL')
      }
      await exited
    },
  }
}
