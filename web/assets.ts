// A site's scripts, stylesheets and icons, read once from a folder at start and served from
// memory under /assets/: only files present then are served, so no request path reaches the
// disk. Shared by the market's pages and the hub console.
import { readdir, readFile } from 'node:fs/promises'
import { extname, join } from 'node:path'
import type { FastifyInstance } from 'fastify'

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
}

/** Reads `dir` and adds `GET /assets/:name` for what it holds. */
export async function serveAssets(app: FastifyInstance, dir: string): Promise<void> {
  const assets = new Map<string, { type: string; body: Buffer }>()
  for (const name of await readdir(dir)) {
    const type = TYPES[extname(name)]
    if (type) assets.set(name, { type, body: await readFile(join(dir, name)) })
  }
  app.get<{ Params: { name: string } }>('/assets/:name', { schema: { hide: true } }, async (req, reply) => {
    const a = assets.get(req.params.name)
    if (!a)
      return reply
        .status(404)
        .type('text/plain; charset=utf-8')
        .send(`no asset ${req.params.name.slice(0, 80)}`)
    return reply
      .type(a.type)
      .header('cache-control', 'no-cache')
      .header('x-content-type-options', 'nosniff')
      .send(a.body)
  })
}
