// Placeholder until the `svc attestor` commands land.
import { type Command, UsageError } from './io.ts'
export const command: Command = async () => {
  throw new UsageError('"attestor" is not built yet')
}
