// Placeholder until the `svc attest` commands land.
import { type Command, UsageError } from './io.ts'
export const command: Command = async () => {
  throw new UsageError('"attest" is not built yet')
}
