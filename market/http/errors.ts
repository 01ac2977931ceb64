// One place where a failure becomes `{ error }` with a status (market/API.md, "Errors").
import type { FastifyError, FastifyInstance } from 'fastify'

/** A rejection with its HTTP status; the message says what was wrong and where. */
export class HttpError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
  ) {
    super(message)
    this.name = 'HttpError'
  }
}

export const badRequest = (m: string): HttpError => new HttpError(400, m)
export const unauthorized = (m: string): HttpError => new HttpError(401, m)
export const forbidden = (m: string): HttpError => new HttpError(403, m)
export const notFound = (m: string): HttpError => new HttpError(404, m)
export const conflict = (m: string): HttpError => new HttpError(409, m)
export const tooLarge = (m: string): HttpError => new HttpError(413, m)
export const chainUnreachable = (m: string): HttpError => new HttpError(502, m)

export function installErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError | HttpError, req, reply) => {
    if (err instanceof HttpError) return reply.status(err.statusCode).send({ error: err.message })
    const fe = err as FastifyError
    if (fe.validation) {
      // Schema failures name the field: "body/agentId must match pattern …".
      return reply.status(400).send({ error: fe.message })
    }
    const status =
      typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500 ? fe.statusCode : 500
    if (status === 500) {
      req.log.error({ err }, 'unhandled error')
      return reply.status(500).send({ error: 'internal error' })
    }
    return reply.status(status).send({ error: fe.message })
  })
  app.setNotFoundHandler((req, reply) =>
    reply.status(404).send({ error: `no route ${req.method} ${req.url.split('?')[0]}` }),
  )
}
