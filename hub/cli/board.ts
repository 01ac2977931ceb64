// Placeholder until the `svc board` commands land.
import { type Command, UsageError } from './io.ts'
export const command: Command = async () => {
  throw new UsageError('"board" is not built yet')
}
