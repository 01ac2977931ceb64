// Runs avrdude to read or write a board's flash through its bootloader, with the board's flash
// profile (profile.ts), reporting progress as it goes. The I/O edge of bridge/flash/: it spawns
// avrdude and the profile's reset command; what avrdude prints is read by avrdude-output.ts.
//
// Entering the bootloader. optiboot listens only after an external reset, and only for about a
// second (its 1 s watchdog, which every byte it receives restarts, after some 0.4 s of LED
// flashes); then it starts the sketch. avrdude 7.1 opens the port, pulses DTR/RTS (the reset of a
// real Uno), sleeps 300 ms, waits for 250 ms of quiet, and only then sends its first GET_SYNC.
//   dtr: avrdude's own pulse does it. On a pseudo-terminal the pulse's ioctl fails
//     (`ioctl("TIOCMGET"): Inappropriate ioctl for device`); avrdude 7.1 says so and carries on.
//   command: the reset is run when avrdude, started with -v, prints `Using Programmer`, which it
//     does just before it opens the port. The reset then lands some 550 ms before the first
//     GET_SYNC however long avrdude took to start (a loaded machine can take far longer than the
//     window to start a process), and a reset that itself runs late still lands in time for
//     avrdude's third GET_SYNC, about 1 s after the marker (on the emulated Uno: an avrdude 2 s
//     slow to start, and a reset 0.9 s late, both worked; 1.3 s late did not). One sync
//     attempt is asked for (`-x attempts=1`: avrdude's later ones would only pulse DTR, which
//     cannot reset such a board), so a missed window fails within about 6 s, and the whole
//     session, reset first, is tried again (`tries`, default 3). A session that got past the sync
//     is never repeated.
// Writes use -D: a bootloader cannot erase the chip; optiboot erases each page as it writes it.
import { spawn, spawnSync } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { resolve } from 'node:path'
import { type Failure, fail } from '../../errors/codes.ts'
import { errorText } from '../../errors/text.ts'
import { AvrdudeOutput, type FlashPhase, type FlashProgress } from './avrdude-output.ts'
import { parseIntelHex } from './intel-hex.ts'
import type { FlashProfile, ResetHow } from './profile.ts'

export type { FlashPhase, FlashProgress } from './avrdude-output.ts'

/** `read`: the whole flash into `path` (Intel HEX); `write`: `path` (Intel HEX) onto the flash, then verified. */
export type FlashOp = { op: 'read'; path: string } | { op: 'write'; path: string }

export interface AvrdudeOptions {
  /** The avrdude to run (default `avrdude` on the PATH). */
  avrdude?: string
  /** The board's serial port. */
  port: string
  profile: FlashProfile
  /** Done in order in one session. */
  ops: FlashOp[]
  onProgress?(p: FlashProgress): void
  /** Aborting kills avrdude (and a running reset command). */
  signal?: AbortSignal
  /** Sessions to try when a reset command did not bring up the bootloader in time (default 3). */
  tries?: number
  /** A safety net: avrdude is killed after this long (default 5 minutes). */
  timeoutMs?: number
}

export type AvrdudeResult =
  | {
      ok: true
      /** From the first reset (or avrdude's start) to avrdude's exit, over every try. */
      ms: number
      /** Bytes avrdude wrote, or for a read only, the bytes of the image read. */
      bytes: number
      /** Sessions it took (more than 1 only with a reset command). */
      tries: number
      /** What avrdude printed in its last session. */
      output: string
    }
  | (Failure & { phase: FlashPhase; output: string })

/** Why avrdude cannot be run, or undefined when it can. */
export function avrdudeMissing(path = 'avrdude'): string | undefined {
  const r = spawnSync(path, ['-?'], { encoding: 'utf8', timeout: 10_000 })
  if (r.error) {
    const code = (r.error as NodeJS.ErrnoException).code
    return code === 'ENOENT'
      ? `${path} is not installed (apt-get install avrdude)`
      : `${path} cannot be run: ${r.error.message} (the Debian package is avrdude)`
  }
  if (!/avrdude/i.test(`${r.stdout}${r.stderr}`)) return `${path} does not answer -? as avrdude does`
  return undefined
}

const RESET_TIMEOUT_MS = 10_000
// Lines of avrdude's output a successful result carries (an error carries its last 20).
const KEEP = 60

/**
 * Runs a reset command (a profile's `reset.argv`); the error says which command and how it failed.
 * Codes: `CANCELLED` (aborted), `UNAVAILABLE` (it could not be started), `TIMEOUT` (killed after
 * 10 s), `UPSTREAM_FAILED` (it ran and failed).
 */
export async function runResetCommand(argv: string[], signal?: AbortSignal): Promise<{ ok: true } | Failure> {
  const shown = argv.join(' ')
  return new Promise((done) => {
    let stderr = ''
    let timedOut = false
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'ignore', 'pipe'], signal })
    // Not spawn's own `timeout`: its timer outlives a program that could not be started.
    const limit = setTimeout(() => {
      timedOut = true
      child.kill('SIGKILL')
    }, RESET_TIMEOUT_MS)
    child.stderr.on('data', (b: Buffer) => {
      if (stderr.length < 4096) stderr += b.toString('utf8')
    })
    child.once('error', (err) =>
      done(
        fail(
          err.name === 'AbortError' ? 'CANCELLED' : 'UNAVAILABLE',
          `reset command \`${shown}\`: ${err.message}`,
        ),
      ),
    )
    child.once('close', (code, sig) => {
      clearTimeout(limit)
      if (code === 0) return done({ ok: true })
      const how = sig ? `was killed by ${sig}` : `exited with ${code}`
      done(
        fail(
          timedOut ? 'TIMEOUT' : 'UPSTREAM_FAILED',
          `reset command \`${shown}\` ${how}${stderr.trim() ? `: ${stderr.trim()}` : ''}`,
        ),
      )
    })
  })
}

/** Checks the ops before anything touches the board: images parse and fit, paths are absolute. */
async function checkOps(
  o: AvrdudeOptions,
): Promise<{ ok: true; ops: FlashOp[]; writeBytes: number } | Failure> {
  if (o.ops.length === 0) return fail('BAD_INPUT', 'nothing to do: no read or write')
  const ops: FlashOp[] = []
  let writeBytes = 0
  for (const op of o.ops) {
    // avrdude reads `-` as standard input or output; an absolute path never is.
    const path = resolve(op.path)
    if (op.op === 'write') {
      let text: string
      try {
        text = await readFile(path, 'utf8')
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'NOT_FOUND' : 'IO_FAILED'
        return fail(code, `cannot read the image ${path}: ${errorText(err)}`)
      }
      const max = o.profile.maxImageBytes
      const img = parseIntelHex(text, { where: path, maxSize: max ?? 256 * 1024 })
      if (!img.ok)
        return fail(
          img.code,
          max && img.code === 'TOO_LARGE' ? `${img.error}: the board takes at most ${max} bytes` : img.error,
        )
      writeBytes += img.value.size
    }
    ops.push({ op: op.op, path })
  }
  return { ok: true, ops, writeBytes }
}

function argsFor(o: AvrdudeOptions, ops: FlashOp[]): string[] {
  const p = o.profile
  return [
    '-v',
    '-c',
    p.programmer,
    '-p',
    p.part,
    '-b',
    String(p.baud),
    '-P',
    o.port,
    '-D',
    ...(p.reset.kind === 'command' ? ['-x', 'attempts=1'] : []),
    ...ops.flatMap((op) => ['-U', `flash:${op.op === 'read' ? 'r' : 'w'}:${op.path}:i`]),
  ]
}

// How long a session may wait for avrdude's `Using Programmer` before resetting anyway (an avrdude
// that words it otherwise).
const MARKER_FALLBACK_MS = 3_000

/** `killedFor`: why the session was stopped (its reset failed, aborted, too slow, avrdude not run). */
type Session = { code: number | null; out: AvrdudeOutput; resetFailed?: Failure; killedFor?: Failure }

function session(o: AvrdudeOptions, ops: FlashOp[], reset: ResetHow): Promise<Session> {
  const out = new AvrdudeOutput()
  return new Promise((done) => {
    const child = spawn(o.avrdude ?? 'avrdude', argsFor(o, ops), { stdio: ['ignore', 'pipe', 'pipe'] })
    let resetStarted = false
    let resetFailed: Failure | undefined
    let killedFor: Failure | undefined
    const kill = (why: Failure): void => {
      killedFor ??= why
      child.kill('SIGTERM')
      setTimeout(() => child.kill('SIGKILL'), 2_000).unref()
    }
    const doReset = (): void => {
      if (resetStarted || reset.kind !== 'command') return
      resetStarted = true
      out.phase = 'reset'
      void runResetCommand(reset.argv, o.signal).then((r) => {
        if (!r.ok) {
          resetFailed = r
          kill(r)
        } else if (out.phase === 'reset') out.phase = 'connecting'
      })
    }
    const fallback = setTimeout(doReset, MARKER_FALLBACK_MS)
    const limit = setTimeout(
      () => kill(fail('TIMEOUT', `avrdude did not finish within ${o.timeoutMs ?? 300_000} ms`)),
      o.timeoutMs ?? 300_000,
    )
    const onAbort = (): void => kill(fail('CANCELLED', 'aborted'))
    o.signal?.addEventListener('abort', onAbort, { once: true })
    const read = (b: Buffer): void => {
      for (const e of out.feed(b.toString('utf8'))) o.onProgress?.(e)
      if (!resetStarted && /Using Programmer\s*:/.test(out.lastLines(5))) doReset()
    }
    child.stderr.on('data', read)
    child.stdout.on('data', read)
    child.once('error', (err) => {
      killedFor ??= fail('UNAVAILABLE', `cannot run ${o.avrdude ?? 'avrdude'}: ${err.message}`)
    })
    child.once('close', (code) => {
      clearTimeout(fallback)
      clearTimeout(limit)
      o.signal?.removeEventListener('abort', onAbort)
      done({ code, out, resetFailed, killedFor })
    })
  })
}

const PHASE_WORDS: Record<FlashPhase, string> = {
  checking: 'checking the image',
  reset: 'resetting the board',
  connecting: 'connecting to the bootloader',
  reading: 'reading the flash',
  writing: 'writing the flash',
  verifying: 'verifying the flash',
}

/** One avrdude session (tried again only when a reset command missed the bootloader's window). */
export async function runAvrdude(o: AvrdudeOptions): Promise<AvrdudeResult> {
  const checked = await checkOps(o)
  if (!checked.ok) return { ...checked, phase: 'checking', output: '' }
  const tries = o.profile.reset.kind === 'command' ? Math.max(1, o.tries ?? 3) : 1
  const t0 = performance.now()
  let last: Session | undefined
  for (let n = 1; n <= tries; n++) {
    if (o.signal?.aborted) break
    last = await session(o, checked.ops, o.profile.reset)
    const s = last
    if (s.code === 0 && !s.killedFor) {
      let bytes = s.out.written || checked.writeBytes
      if (!checked.ops.some((op) => op.op === 'write')) {
        const read = checked.ops.find((op) => op.op === 'read')!
        const img = parseIntelHex(await readFile(read.path, 'utf8').catch(() => ''), { where: read.path })
        bytes = img.ok ? img.value.size : 0
      }
      return {
        ok: true,
        ms: Math.round(performance.now() - t0),
        bytes,
        tries: n,
        output: s.out.lastLines(KEEP),
      }
    }
    // Only a session that never reached the bootloader is tried again: nothing was written.
    if (s.resetFailed || s.killedFor || s.out.phase !== 'connecting') break
  }
  const s = last
  if (!s) return { ...fail('CANCELLED', 'aborted'), phase: 'reset', output: '' }
  const phase = s.resetFailed ? 'reset' : s.out.phase
  const stopped = s.resetFailed ?? s.killedFor
  // avrdude's own failure: a bootloader that never answered is a board not reached; past that, the
  // board answered and the read, write or verify failed.
  const code = stopped?.code ?? (phase === 'connecting' ? 'UNREACHABLE' : 'UPSTREAM_FAILED')
  const why = stopped?.error ?? s.out.reason()
  const triesNote = tries > 1 && phase === 'connecting' ? ` (${tries} tries, each after a reset)` : ''
  return {
    ...fail(code, `avrdude failed while ${PHASE_WORDS[phase]}: ${why}${triesNote}`),
    phase,
    output: s.out.lastLines(20),
  }
}
