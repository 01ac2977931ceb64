// `svc attestor`: the attestor alone on its own Fastify server.
import Fastify from 'fastify'
import { type ErrorLog, installJsonErrors } from '../../errors/fastify.ts'
import { createMarketLog } from '../log.ts'
import { attestorPlugin } from './plugin.ts'
import type { AttestorConfig } from './config.ts'
import { attestorPreflight } from './preflight.ts'
import { createAttestor } from './service.ts'

export interface AttestorServer {
  url: string
  address: `0x${string}`
  close(): Promise<void>
}

export async function startAttestorServer(
  config: AttestorConfig,
  opts: {
    host?: string
    port?: number
    /** Where a 5xx is logged with its error; default the market's logger on stderr. */
    log?: ErrorLog
    warn?: (line: string) => void
  } = {},
): Promise<AttestorServer> {
  // A chain that fails preflight gets no attestor: answering on it would fail line by line.
  const pre = await attestorPreflight(config)
  if (!pre.ok) throw new Error(pre.error)
  for (const w of pre.warnings) opts.warn?.(w)
  const app = Fastify({ logger: false })
  // JSON errors for everything the plugin refuses or does not answer (bad JSON, wrong type, 404).
  installJsonErrors(app, opts.log ?? createMarketLog(), { notFound: () => 'not found' })
  const attestor = createAttestor(config)
  await app.register(attestorPlugin, { attestor, validationRegistry: config.validationRegistry })
  const host = opts.host ?? '127.0.0.1'
  await app.listen({ host, port: opts.port ?? 0 })
  const addr = app.server.address()
  const port = typeof addr === 'object' && addr ? addr.port : (opts.port ?? 0)
  return { url: `http://${host}:${port}`, address: attestor.address, close: () => app.close() }
}
