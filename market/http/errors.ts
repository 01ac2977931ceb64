// The market's refusals: each a CodedError whose code gives the status (errors/codes.ts); the
// app answers them `{ error, code }` through installJsonErrors (market/API.md, "Errors").
import { CodedError } from '../../errors/codes.ts'

export const badRequest = (m: string): CodedError => new CodedError('BAD_INPUT', m)
export const unauthorized = (m: string): CodedError => new CodedError('UNAUTHORIZED', m)
export const forbidden = (m: string): CodedError => new CodedError('FORBIDDEN', m)
export const notFound = (m: string): CodedError => new CodedError('NOT_FOUND', m)
export const conflict = (m: string): CodedError => new CodedError('CONFLICT', m)
export const tooLarge = (m: string): CodedError => new CodedError('TOO_LARGE', m)
/** The chain, or the IPFS node that pins files, did not answer. */
export const unreachable = (m: string): CodedError => new CodedError('UNREACHABLE', m)
export const chainUnreachable = unreachable
