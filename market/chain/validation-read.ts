// One row read from the validation registry, as the market's verify uses it: the row, or why it
// could not be read. The failure arm is chain/reads.ts's own; the success arm names the row.
// Its own file so the chain interface and the batch reader that fills it need not import each other.
import type { ReadFailure } from '../../chain/reads.ts'
import type { ValidationRow } from '../../records/verify-row.ts'

export type ValidationRead = { ok: true; row: ValidationRow } | ReadFailure
