// Placeholder until the `svc key` commands land.
import { type Command, UsageError } from './io.ts'
export const command: Command = async () => {
  throw new UsageError('"key" is not built yet')
}
