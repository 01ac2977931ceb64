// `svc hub restore`: being built (replaced before this work lands).
import { type Command, UserError } from './io.ts'

export const command: Command = async () => {
  throw new UserError('svc hub restore: not built yet')
}
