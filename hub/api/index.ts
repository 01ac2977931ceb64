// The hub's local API: runs, approvals and logs over loopback HTTP, bearer
// token on every route, JSON errors `{ error, code }` (errors/fastify.ts). Returned not listening, so the hub can register
// more routes (channel inboxes…) before it listens on 127.0.0.1.
import { timingSafeEqual } from 'node:crypto'
import Fastify, { type FastifyInstance } from 'fastify'
import { CodedError } from '../../errors/codes.ts'
import { type ErrorLog, installJsonErrors, namedValidationMessage } from '../../errors/fastify.ts'
import { RUN_STATES, type RunState } from '../../sops/run/states.ts'
import type { Json } from '../../sops/types.ts'
import { type HubEngine, type RunFilter, RunFilterError } from '../../sops/hub-engine.ts'
import { backlog } from '../../sops/run/backlog.ts'
import { createLog } from '../log.ts'
import { parseTimeArg } from './time-arg.ts'

export {
  type ApiInfo,
  type HubAbout,
  issueApiToken,
  readApiInfo,
  readApiToken,
  removeApiInfo,
  writeApiInfo,
} from './token.ts'

// Route schemas as JSON Schema literals, not typebox's Type builders: Fastify hands them to ajv
// either way, and the builders' module (~300 files) is not worth loading at hub start for these.
const Id = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'string', minLength: 1, maxLength: 200 } },
} as const
const Name = {
  type: 'object',
  required: ['name'],
  properties: { name: { type: 'string', minLength: 1, maxLength: 200 } },
} as const
const Approve = {
  type: 'object',
  properties: {
    by: { type: 'string', minLength: 1, maxLength: 200 },
    note: { type: 'string', maxLength: 2000 },
    decisions: { type: 'object', patternProperties: { '^[0-9]+$': { type: 'boolean' } } },
  },
  additionalProperties: false,
} as const
const Deny = {
  type: 'object',
  properties: {
    by: { type: 'string', minLength: 1, maxLength: 200 },
    note: { type: 'string', maxLength: 2000 },
  },
  additionalProperties: false,
} as const
const List = {
  type: 'object',
  properties: {
    sop: { type: 'string', minLength: 1 },
    state: { type: 'string', enum: [...RUN_STATES] },
    limit: { type: 'integer', minimum: 1, maximum: 1000 },
    since: { type: 'string', minLength: 1, maxLength: 100 },
    until: { type: 'string', minLength: 1, maxLength: 100 },
    cursor: { type: 'string', minLength: 1, maxLength: 200 },
  },
  additionalProperties: false,
} as const
const TriggerBody = { type: 'object', properties: { payload: {} }, additionalProperties: false } as const

function sameToken(given: string, token: string): boolean {
  const a = Buffer.from(given)
  const b = Buffer.from(token)
  return a.length === b.length && timingSafeEqual(a, b)
}

export function createLocalApi(opts: {
  engine: HubEngine
  token: string
  bodyLimit?: number
  /** Where a 5xx is logged with its error: the hub's logger; default a new one on stdout. */
  log?: ErrorLog
}): FastifyInstance {
  const { engine, token } = opts
  // Reject unknown fields rather than strip them silently (hub/DESIGN.md, "Errors and bad input").
  const app = Fastify({
    bodyLimit: opts.bodyLimit ?? 64 * 1024,
    logger: false,
    ajv: { customOptions: { removeAdditional: false } },
  })

  app.addHook('onRequest', async (req) => {
    const h = req.headers.authorization
    if (typeof h !== 'string' || !h.startsWith('Bearer '))
      throw new CodedError(
        'UNAUTHORIZED',
        'missing bearer token (Authorization: Bearer <token from the hub token file>)',
      )
    if (!sameToken(h.slice(7).trim(), token)) throw new CodedError('UNAUTHORIZED', 'bad bearer token')
  })
  // A POST with no body is an empty object: `svc sop approve <id>` needs nothing more.
  app.addHook('preValidation', async (req) => {
    if (req.method === 'POST' && (req.body === undefined || req.body === null)) req.body = {}
  })
  // A refused `state` lists the states; a refused field is named.
  installJsonErrors(app, opts.log ?? createLog(), { validationMessage: namedValidationMessage })

  app.get('/sop/pending', async () => ({ runs: engine.pending() }))

  // A page of run history from the run index, newest first; `next` goes back as `cursor`.
  app.get('/sop/runs', { schema: { querystring: List } }, async (req) => {
    const q = req.query as {
      sop?: string
      state?: RunState
      limit?: number
      since?: string
      until?: string
      cursor?: string
    }
    const now = Date.now()
    const filter: RunFilter = {
      ...(q.sop !== undefined ? { sop: q.sop } : {}),
      ...(q.state !== undefined ? { state: q.state } : {}),
      ...(q.limit !== undefined ? { limit: q.limit } : {}),
      ...(q.cursor !== undefined ? { cursor: q.cursor } : {}),
    }
    for (const k of ['since', 'until'] as const) {
      const v = q[k]
      if (v === undefined) continue
      const t = parseTimeArg(v, now)
      if (!t.ok) throw new CodedError('BAD_INPUT', `querystring/${k}: ${t.error}`)
      filter[k] = t.ms
    }
    try {
      return await engine.queryRuns(filter)
    } catch (err) {
      if (err instanceof RunFilterError) throw new CodedError('BAD_INPUT', err.message)
      throw err
    }
  })

  // Triggers kept by the hold and parallel policies, per SOP (sops/run/backlog.ts).
  app.get('/sop/held', async () => {
    const now = Date.now()
    return { now, sops: backlog(engine.keptTriggers(), now) }
  })

  app.get('/sop/runs/:id', { schema: { params: Id } }, async (req) => {
    const { id } = req.params as { id: string }
    const run = await engine.getRun(id)
    if (!run) throw new CodedError('RUN_NOT_FOUND', `no run with id "${id}"`)
    return { run }
  })

  app.get('/sop/runs/:id/logs', { schema: { params: Id } }, async (req) => {
    const { id } = req.params as { id: string }
    const log = await engine.logs(id)
    if (!log) throw new CodedError('RUN_NOT_FOUND', `no run with id "${id}"`)
    return { log }
  })

  app.post('/sop/runs/:id/approve', { schema: { params: Id, body: Approve } }, async (req) => {
    const { id } = req.params as { id: string }
    const b = (req.body ?? {}) as { by?: string; note?: string; decisions?: Record<string, boolean> }
    const decisions = b.decisions
      ? Object.fromEntries(Object.entries(b.decisions).map(([k, v]) => [Number(k), v]))
      : undefined
    const r = await engine.approve(id, {
      by: b.by ?? 'operator (local API)',
      ...(b.note !== undefined ? { note: b.note } : {}),
      ...(decisions ? { decisions } : {}),
      via: 'operator',
    })
    if (!r.ok) throw new CodedError(r.code, r.error)
    return { run: r.run }
  })

  app.post('/sop/runs/:id/deny', { schema: { params: Id, body: Deny } }, async (req) => {
    const { id } = req.params as { id: string }
    const b = (req.body ?? {}) as { by?: string; note?: string }
    const r = await engine.deny(id, {
      by: b.by ?? 'operator (local API)',
      ...(b.note !== undefined ? { note: b.note } : {}),
    })
    if (!r.ok) throw new CodedError(r.code, r.error)
    return { run: r.run }
  })

  app.post('/sop/:name/trigger', { schema: { params: Name, body: TriggerBody } }, async (req) => {
    const { name } = req.params as { name: string }
    const b = (req.body ?? {}) as { payload?: unknown }
    const d = await engine.trigger(name, {
      type: 'manual',
      source: 'local API',
      payload: (b.payload ?? {}) as Json,
      at: Date.now(),
    })
    if (d.code) throw new CodedError(d.code, d.reason)
    return d
  })

  return app
}
