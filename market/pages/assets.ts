// The pages' scripts and stylesheet, read once from ./static and served from memory under
// /assets/. Only files present at start are served, so no path from a request reaches the disk.
import { readFile, readdir } from 'node:fs/promises'
import { extname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { FastifyPluginAsync } from 'fastify'

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
}

export const STATIC_DIR = fileURLToPath(new URL('./static/', import.meta.url))

export async function loadAssets(dir = STATIC_DIR): Promise<Map<string, { type: string; body: Buffer }>> {
  const out = new Map<string, { type: string; body: Buffer }>()
  for (const name of await readdir(dir)) {
    const type = TYPES[extname(name)]
    if (type) out.set(name, { type, body: await readFile(join(dir, name)) })
  }
  return out
}

export const assetRoutes: FastifyPluginAsync = async (app) => {
  const assets = await loadAssets()
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
