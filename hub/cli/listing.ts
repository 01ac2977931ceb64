// Placeholder until the `svc listing` commands land.
import { type Command, UsageError } from './io.ts'
export const command: Command = async () => {
  throw new UsageError('"listing" is not built yet')
}
