// The attestor mounted inside a market app, for `svc start` and for `svc market` with an
// `[attestor]` table: one place that turns an attestor config into the plugin the market
// registers beside its own routes.
import type { FastifyPluginAsync } from 'fastify'
import type { AttestorConfig } from './config.ts'
import { attestorPlugin } from './plugin.ts'
import { createAttestor } from './service.ts'

export function attestorRoutes(config: AttestorConfig): FastifyPluginAsync {
  const attestor = createAttestor(config)
  return async (app) => {
    await app.register(attestorPlugin, { attestor, validationRegistry: config.validationRegistry })
  }
}
