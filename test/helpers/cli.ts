// The `svc` command line in this process, as a user's shell would run it: argv in, exit code and
// what it printed on stdout and stderr out.
import type { CliIo } from '../../cli/io.ts'
import { main } from '../../cli/main.ts'

export interface CliResult {
  code: number
  out: string
  err: string
}

/** `svc <argv…>` with this environment and working directory. */
export function svcCli(env: NodeJS.ProcessEnv, cwd = process.cwd()) {
  return async (...argv: string[]): Promise<CliResult> => {
    let out = ''
    let err = ''
    const io: CliIo = {
      out: (s) => void (out += s + '\n'),
      err: (s) => void (err += s + '\n'),
      env,
      cwd,
    }
    const code = await main(argv, io)
    return { code, out, err }
  }
}
