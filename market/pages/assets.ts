// The pages' scripts and stylesheet: ./static, served by web/assets.ts.
import { fileURLToPath } from 'node:url'
import type { FastifyPluginAsync } from 'fastify'
import { serveAssets } from '../../web/assets.ts'

export const STATIC_DIR = fileURLToPath(new URL('./static/', import.meta.url))

export const assetRoutes: FastifyPluginAsync = (app) => serveAssets(app, STATIC_DIR)
