// `POST /hub/backup` on the local API (token, loopback): the archive of the running hub, made
// as it is sent (archive.ts), so `svc hub backup` can write it wherever the user says. One at a
// time; a second is refused while one is being taken. Takes no new work and writes nothing on
// the hub's disk, so it goes on while a full disk refuses events (hub/disk/).
import { PassThrough } from 'node:stream'
import type { FastifyInstance } from 'fastify'
import type { Log } from '../log.ts'
import { type ArchiveStore, writeArchive } from './archive.ts'
import { CodedError } from '../../errors/codes.ts'
import { type HubPlaces, backupFiles } from './files.ts'

export interface BackupRouteOptions {
  places: HubPlaces
  /** The hub's open stores, each read from a snapshot taken when the archive reaches it. */
  stores(history: boolean): ArchiveStore[]
  log: Log
}

const Body = {
  type: 'object',
  properties: { history: { type: 'boolean' } },
  additionalProperties: false,
} as const

export function backupRoute(o: BackupRouteOptions): (app: FastifyInstance) => void {
  let taking = false
  return (app) => {
    app.post('/hub/backup', { schema: { body: Body } }, async (req, reply) => {
      if (taking) throw new CodedError('CONFLICT', 'a backup is already being taken; try again when it ends')
      const history = (req.body as { history?: boolean } | undefined)?.history !== false
      taking = true
      const out = new PassThrough()
      const started = Date.now()
      void (async () => {
        try {
          const files = await backupFiles(o.places)
          const m = await writeArchive(out, { files, stores: o.stores(history), history })
          o.log.info(
            { files: files.length, stores: m.stores, history, ms: Date.now() - started },
            'backup taken',
          )
        } catch (err) {
          // The client sees the stream end without a manifest, and says the backup failed.
          o.log.warn({ err }, 'backup failed')
          out.destroy(err as Error)
        } finally {
          taking = false
        }
      })()
      return reply.type('application/gzip').send(out)
    })
  }
}
