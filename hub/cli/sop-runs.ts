// Placeholder until the run commands land (issue 3): pending, approve, deny, logs, run.
import { type CliIo, UsageError } from './io.ts'
export async function runsCommand(sub: string, _argv: string[], _io: CliIo): Promise<number> {
  throw new UsageError(`"sop ${sub}" is not built yet`)
}
