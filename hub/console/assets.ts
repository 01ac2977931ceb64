// The console's stylesheet, script and icon, read once from ./static at start and served from
// memory: only files present then are served, so no request path reaches the disk.
import { readdir, readFile } from 'node:fs/promises'
import { extname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { FastifyInstance } from 'fastify'

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
}

export const STATIC_DIR = fileURLToPath(new URL('./static/', import.meta.url))

export async function assetRoutes(app: FastifyInstance, dir = STATIC_DIR): Promise<void> {
  const assets = new Map<string, { type: string; body: Buffer }>()
  for (const name of await readdir(dir)) {
    const type = TYPES[extname(name)]
    if (type) assets.set(name, { type, body: await readFile(join(dir, name)) })
  }
  app.get<{ Params: { name: string } }>('/assets/:name', async (req, reply) => {
    const a = assets.get(req.params.name)
    if (!a)
      return reply
        .status(404)
        .type('text/plain; charset=utf-8')
        .send(`no asset ${req.params.name.slice(0, 80)}`)
    return reply.type(a.type).header('cache-control', 'no-cache').send(a.body)
  })
}
