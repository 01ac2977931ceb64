// Placeholder until `npm start` runs the whole product (issue 7).
import { type Command, UsageError } from './io.ts'
export const command: Command = async () => {
  throw new UsageError('"start" is not built yet')
}
