// Error codes: the stable name of each kind of refusal, carried beside the human message in a
// result (`{ ok: false, code, error }`) and in every JSON error body (`{ error, code }`). An HTTP
// status comes from this table, never from the message text, so a message can be reworded without
// changing what a client or a caller branches on. Pure: the engine's interface in sops/ uses it.

/** Code → HTTP status. A code names what went wrong; several codes may share a status. */
export const ERROR_STATUS = {
  // The caller's input: a request, a command's arguments, a payload, a file a user wrote.
  BAD_INPUT: 400,
  DECISION_MISSING: 400,
  UNAUTHORIZED: 401,
  PAYMENT_NOT_ACCEPTED: 402,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  RUN_NOT_FOUND: 404,
  SOP_NOT_LOADED: 404,
  METHOD_NOT_ALLOWED: 405,
  CONFLICT: 409,
  RUN_NOT_WAITING: 409,
  NEEDS_OPERATOR: 409,
  /** Stopped on purpose before it finished (a shutdown, a cancelled wait). */
  CANCELLED: 409,
  TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  RATE_LIMITED: 429,
  // This side's fault: a request was fine, the server could not serve it.
  INTERNAL: 500,
  /** The operator's configuration (hub.toml, market.toml, a chain file, a secret file) is wrong. */
  BAD_CONFIG: 500,
  /** A file or store could not be read or written (other than for want of room). */
  IO_FAILED: 500,
  /** Another party (a service, the chain, a board, a programmer) could not be reached. */
  UNREACHABLE: 502,
  /** Another party answered, with a failure or with something that is not what it must send. */
  UPSTREAM_FAILED: 502,
  /** The chain reverted a call or a transaction. */
  CHAIN_REVERTED: 502,
  /** A part this needs is missing or not ready (a program not installed, a board updating). */
  UNAVAILABLE: 503,
  /** Another party did not answer in time. */
  TIMEOUT: 504,
  /**
   * Refused or failed for want of disk: nothing was written, and the sender should try again later.
   * 503 with Retry-After is what HTTP senders retry on (507 is WebDAV's, and few clients know it).
   */
  DISK_FULL: 503,
} as const

export type ErrorCode = keyof typeof ERROR_STATUS

export const statusOf = (code: ErrorCode): number => ERROR_STATUS[code]

/** The first code of a status: the generic one, for a status a library chose (Fastify's own 4xx). */
export function codeOfStatus(status: number): ErrorCode | undefined {
  for (const [code, s] of Object.entries(ERROR_STATUS)) if (s === status) return code as ErrorCode
  return undefined
}

/** A refusal as a result: the code to branch on, the message to show. */
export interface Failure<C extends ErrorCode = ErrorCode> {
  ok: false
  code: C
  error: string
}

export const fail = <C extends ErrorCode>(code: C, error: string): Failure<C> => ({ ok: false, code, error })

/** A success carrying `T`'s fields, or a coded refusal. */
export type Result<T extends object = object> = ({ ok: true } & T) | Failure

/** The same refusal, its message prefixed with where it happened (`hub.toml: `, `tool "x": `). */
export const failAt = (prefix: string, f: Failure): Failure => ({
  ok: false,
  code: f.code,
  error: `${prefix}${f.error}`,
})

/** A refusal thrown from a route: the server's error handler answers `{ error, code }` with its status. */
export class CodedError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options)
    this.name = 'CodedError'
  }

  get statusCode(): number {
    return ERROR_STATUS[this.code]
  }
}
