// GET /metrics on the hub's local API: behind its bearer token like every route there (the
// API's onRequest hook), on 127.0.0.1 like the rest of it.
import type { FastifyInstance } from 'fastify'

export interface Scrape {
  contentType: string
  body: string
}

export function registerMetricsRoute(app: FastifyInstance, scrape: () => Promise<Scrape>): void {
  app.get('/metrics', async (_req, reply) => {
    const m = await scrape()
    return reply.type(m.contentType).send(m.body)
  })
}
