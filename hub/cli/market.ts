// Placeholder until the `svc market` commands land.
import { type Command, UsageError } from './io.ts'
export const command: Command = async () => {
  throw new UsageError('"market" is not built yet')
}
