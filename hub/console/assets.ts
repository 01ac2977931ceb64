// The console's stylesheet, scripts and icon: ./static, served by web/assets.ts.
import { fileURLToPath } from 'node:url'
import type { FastifyInstance } from 'fastify'
import { serveAssets } from '../../web/assets.ts'

export const STATIC_DIR = fileURLToPath(new URL('./static/', import.meta.url))

export const assetRoutes = (app: FastifyInstance, dir = STATIC_DIR): Promise<void> => serveAssets(app, dir)
