// Placeholder until the `svc hub` commands land.
import { type Command, UsageError } from './io.ts'
export const command: Command = async () => {
  throw new UsageError('"hub" is not built yet')
}
