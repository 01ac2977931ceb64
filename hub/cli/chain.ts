// Placeholder until the `svc chain` commands land.
import { type Command, UsageError } from './io.ts'
export const command: Command = async () => {
  throw new UsageError('"chain" is not built yet')
}
