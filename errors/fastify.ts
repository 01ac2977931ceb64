// The one error path of every Fastify server (the hub's local API, webhook gateway and console,
// the market, the attestor): a thrown CodedError answers its code's status, a schema failure 400
// naming the field, Fastify's own refusals their status, anything else 500 `internal error`; the
// body is `{ error, code }`, and every 5xx is logged with the error object through the server's
// logger (hub/DESIGN.md, "Errors and bad input").
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { CodedError, type ErrorCode, codeOfStatus, statusOf } from './codes.ts'

/** The part of a pino logger (the hub's `Log`, the market's) this needs. */
export interface ErrorLog {
  error(obj: object, msg?: string): void
}

export interface ErrorAnswer {
  status: number
  code: ErrorCode
  error: string
}

export interface JsonErrorOptions {
  /** The 400 message of a schema failure; default Fastify's (`body/agentId must match pattern …`). */
  validationMessage?: (err: FastifyError) => string
  /** The 413 message when a body is over the server's limit; default Fastify's. */
  tooLarge?: string
  /** The 404 message of an unknown route; default `no route <METHOD> <path>`; false: the server sets its own. */
  notFound?: ((req: FastifyRequest) => string) | false
  /** Sends the answer some other way than `{ error, code }` (the console renders a page). */
  send?: (reply: FastifyReply, answer: ErrorAnswer, req: FastifyRequest) => FastifyReply
}

/** What a failure answers: decided by its code, its validation or Fastify's status, never its text. */
export function answerFor(err: unknown, o: JsonErrorOptions = {}): ErrorAnswer {
  if (err instanceof CodedError) return { status: statusOf(err.code), code: err.code, error: err.message }
  const fe = err as Partial<FastifyError>
  if (fe.validation)
    return {
      status: 400,
      code: 'BAD_INPUT',
      error: o.validationMessage ? o.validationMessage(fe as FastifyError) : String(fe.message),
    }
  const s = fe.statusCode
  if (typeof s === 'number' && s >= 400 && s < 500)
    return {
      status: s,
      code: codeOfStatus(s) ?? 'BAD_INPUT',
      error: s === 413 && o.tooLarge !== undefined ? o.tooLarge : String(fe.message),
    }
  return { status: 500, code: 'INTERNAL', error: 'internal error' }
}

/**
 * A schema failure's message with what the bare one leaves out: the allowed values of an enum
 * and the name of a property the schema does not allow (read from ajv's error, not its text).
 */
export function namedValidationMessage(err: FastifyError): string {
  let m = err.message
  const v = (err.validation ?? []) as { keyword?: string; params?: Record<string, unknown> }[]
  const allowed = v.find((e) => e.keyword === 'enum')?.params?.allowedValues
  if (Array.isArray(allowed)) m += ` (${allowed.join(', ')})`
  const extra = v.find((e) => e.params?.additionalProperty !== undefined)?.params?.additionalProperty
  if (extra !== undefined) m += `: "${String(extra)}"`
  return m
}

export function installJsonErrors(app: FastifyInstance, log: ErrorLog, o: JsonErrorOptions = {}): void {
  app.setErrorHandler((err, req, reply) => {
    const a = answerFor(err, o)
    if (a.status >= 500)
      log.error(
        { err, method: req.method, url: req.url.split('?')[0], status: a.status, code: a.code },
        `${req.method} ${req.url.split('?')[0]} answered ${a.status}`,
      )
    void reply.code(a.status)
    return o.send ? o.send(reply, a, req) : reply.send({ error: a.error, code: a.code })
  })
  const notFound = o.notFound
  if (notFound === false) return
  app.setNotFoundHandler((req, reply) =>
    reply.code(404).send({
      error: notFound ? notFound(req) : `no route ${req.method} ${req.url.split('?')[0]}`,
      code: 'NOT_FOUND' satisfies ErrorCode,
    }),
  )
}
