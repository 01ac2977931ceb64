// The attestation store over the hub's local API: while the hub runs it holds the store's
// LevelDB lock, so `svc attest status|export` ask the hub instead of opening the store.
import { isAbsolute } from 'node:path'
import type { FastifyInstance } from 'fastify'
import { exportAttestations } from './export.ts'
import type { AttestCounts } from './record.ts'
import type { AttestStore } from './store.ts'
import type { SyncStatus } from './sync-status.ts'
import { CodedError } from '../../errors/codes.ts'
import { errorText } from '../../errors/text.ts'

// JSON Schema literal: typebox's builders are not loaded by the hub (tools/types.ts says why).
const ExportBody = {
  type: 'object',
  required: ['out'],
  properties: {
    // Absolute: the hub's working directory is not the caller's.
    out: { type: 'string', minLength: 1, maxLength: 4096 },
    // First seq 0-based inclusive, last seq exclusive (as exportAttestations).
    from: { type: 'integer', minimum: 0 },
    to: { type: 'integer', minimum: 0 },
  },
  additionalProperties: false,
} as const

/** The lines per state and what sync is doing: `svc attest status --json`, GET /attest/status and the console. */
export type AttestStatus = AttestCounts & { sync: SyncStatus | null }

export function attestStatus(store: AttestStore, sync: SyncStatus | null): AttestStatus {
  return { ...store.counts(), sync }
}

/**
 * GET /attest/status: the counts, and `sync` (sync-status.ts: state, its sentence, progress with
 * lines/s and ETA, rate-limit and stuck details), null when this hub has no sync running.
 */
export function attestRoutes(
  store: AttestStore,
  syncStatus: () => SyncStatus | null = () => null,
): (app: FastifyInstance) => void {
  return (app) => {
    app.get('/attest/status', async () => attestStatus(store, syncStatus()))
    app.post<{ Body: { out: string; from?: number; to?: number } }>(
      '/attest/export',
      { schema: { body: ExportBody } },
      async (req) => {
        const { out, from, to } = req.body
        if (!isAbsolute(out)) throw new CodedError('BAD_INPUT', `out must be an absolute path (got "${out}")`)
        if (from !== undefined && to !== undefined && to < from)
          throw new CodedError('BAD_INPUT', 'to must not be before from')
        try {
          return await exportAttestations(store, out, {
            ...(from !== undefined ? { from } : {}),
            ...(to !== undefined ? { to } : {}),
          })
        } catch (err) {
          // The file system's own message says why (a full disk, a folder that is not there).
          throw new CodedError('IO_FAILED', `export to ${out} failed: ${errorText(err)}`, {
            cause: err,
          })
        }
      },
    )
  }
}
