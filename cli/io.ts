// Shared CLI plumbing: one error type for user mistakes (printed without a stack trace),
// and the exit codes every command uses.
export const EXIT_OK = 0
/** The thing checked was wrong (invalid SOP, failed verification…). */
export const EXIT_FAIL = 1
/** The command line itself was wrong. */
export const EXIT_USAGE = 2

/** A mistake by the user: printed as one line on stderr, no stack trace. */
export class UserError extends Error {
  constructor(
    message: string,
    readonly exitCode: number = EXIT_FAIL,
  ) {
    super(message)
    this.name = 'UserError'
  }
}

export class UsageError extends UserError {
  constructor(message: string) {
    super(message, EXIT_USAGE)
    this.name = 'UsageError'
  }
}

export interface CliIo {
  out(text: string): void
  err(text: string): void
  env: NodeJS.ProcessEnv
  cwd: string
}

export const processIo: CliIo = {
  out: (text) => void process.stdout.write(text.endsWith('\n') ? text : text + '\n'),
  err: (text) => void process.stderr.write(text.endsWith('\n') ? text : text + '\n'),
  env: process.env,
  cwd: process.cwd(),
}

/**
 * A reader that stops early (`svc attest verify-line … | head -1`) closes our stdout: the next
 * write fails with EPIPE, which Node raises as an 'error' event that would end the process with
 * a stack trace. Like a Unix tool killed by SIGPIPE, end quietly instead; other errors still
 * surface.
 */
export function endQuietlyOnClosedPipe(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0)
      throw err
    })
  }
}

/** A command group: `svc <group> …`. Returns the exit code. */
export type Command = (argv: string[], io: CliIo) => Promise<number>

/** Resolves at the first SIGINT or SIGTERM: how a foreground server command (`svc market`, `svc attestor`, `svc chain dev`) waits to stop. */
export function untilStopSignal(): Promise<void> {
  return new Promise<void>((done) => {
    const stop = (): void => {
      process.off('SIGINT', stop)
      process.off('SIGTERM', stop)
      done()
    }
    process.on('SIGINT', stop)
    process.on('SIGTERM', stop)
  })
}
