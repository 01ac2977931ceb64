// Placeholder until the SOP commands land (issue 2).
import { type Command, UsageError } from './io.ts'
export const command: Command = async () => {
  throw new UsageError('sop commands are not built yet')
}
