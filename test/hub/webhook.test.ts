// The webhook gateway on a real loopback port.
import t from 'tap'
import { DiskRefusal } from '../../hub/disk/errors.ts'
import { silentLog } from '../../hub/log.ts'
import type { Firer } from '../../hub/triggers/fire.ts'
import { logLines } from '../helpers/log-lines.ts'
import { createFirer } from '../../hub/triggers/fire.ts'
import { buildPlan } from '../../hub/triggers/plan.ts'
import { startWebhookGateway } from '../../hub/triggers/webhook.ts'
import { matches } from '../../sops/conditions.ts'
import { recordingEngine, sop } from './fake-engine.ts'

async function gateway(t: { teardown(fn: () => unknown): void }, engine = recordingEngine()) {
  const plan = buildPlan([sop('hook', [{ type: 'webhook', path: '/hooks/order' }])])
  const gw = await startWebhookGateway(
    createFirer(engine, matches, silentLog),
    silentLog,
    { host: '127.0.0.1', port: 0, bodyLimit: 1024 },
    plan,
  )
  t.teardown(() => gw.stop())
  return { gw, engine }
}

t.test('POST on exactly the configured path starts a run and answers { runId, outcome }', async (t) => {
  const { gw, engine } = await gateway(t)
  let res = await fetch(`${gw.url}/hooks/order`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{"sku":"A1","qty":2}',
  })
  t.equal(res.status, 202)
  t.same(await res.json(), { runId: 'run-1', outcome: 'started', reason: 'slot free' })
  t.same(engine.calls[0]?.event.payload, { sku: 'A1', qty: 2 }, 'JSON body is the JSON payload')
  t.equal(engine.calls[0]?.event.type, 'webhook')
  t.equal(engine.calls[0]?.event.source, '/hooks/order')
  res = await fetch(`${gw.url}/hooks/order?x=1`, {
    method: 'POST',
    headers: { 'content-type': 'text/plain' },
    body: 'hello',
  })
  t.equal(res.status, 202)
  t.equal(engine.calls[1]?.event.payload, 'hello', 'text body is the text payload')
  res = await fetch(`${gw.url}/hooks/order`, { method: 'POST' })
  t.equal(res.status, 202, 'an empty body is an empty text payload')
  t.equal(engine.calls[2]?.event.payload, '')
})

t.test('anything else is refused with a reason, and starts nothing', async (t) => {
  const { gw, engine } = await gateway(t)
  const cases: [string, RequestInit, number, RegExp][] = [
    ['/hooks/order/', { method: 'POST' }, 404, /no webhook at \/hooks\/order\//],
    ['/hooks/ORDER', { method: 'POST' }, 404, /no webhook/],
    ['/hooks', { method: 'POST' }, 404, /no webhook/],
    ['/hooks/order', { method: 'GET' }, 405, /accepts POST only/],
    ['/hooks/order', { method: 'PUT', body: 'x' }, 405, /accepts POST only/],
    [
      '/hooks/order',
      { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"broken' },
      400,
      /body is not valid JSON/,
    ],
    [
      '/hooks/order',
      { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'x'.repeat(2048) },
      413,
      /larger than 1024 bytes/,
    ],
  ]
  for (const [path, init, status, re] of cases) {
    const res = await fetch(`${gw.url}${path}`, init)
    t.equal(res.status, status, `${init.method} ${path}`)
    t.match((await res.json()) as { error: string }, { error: re })
  }
  t.equal(engine.calls.length, 0)
})

t.test('admission outcomes other than started still answer, with the outcome', async (t) => {
  const engine = recordingEngine(() => ({ outcome: 'cooldown', reason: 'inside cooldown_secs' }))
  const { gw } = await gateway(t, engine)
  const res = await fetch(`${gw.url}/hooks/order`, { method: 'POST', body: 'x' })
  t.equal(res.status, 200)
  t.same(await res.json(), { runId: null, outcome: 'cooldown', reason: 'inside cooldown_secs' })
})

t.test('a caller over the rate limit gets 429 with a reason; nothing more is started', async (t) => {
  const engine = recordingEngine()
  const plan = buildPlan([sop('hook', [{ type: 'webhook', path: '/h' }])])
  const gw = await startWebhookGateway(
    createFirer(engine, matches, silentLog),
    silentLog,
    { host: '127.0.0.1', port: 0, bodyLimit: 1024, rateLimit: 3 },
    plan,
  )
  t.teardown(() => gw.stop())
  const codes: number[] = []
  for (let i = 0; i < 5; i++) codes.push((await fetch(`${gw.url}/h`, { method: 'POST', body: 'x' })).status)
  t.same(codes, [202, 202, 202, 429, 429])
  const res = await fetch(`${gw.url}/h`, { method: 'POST', body: 'x' })
  t.match(await res.json(), { error: /rate limited: more than 3 requests a minute/ })
  t.equal(engine.calls.length, 3)
})

t.test("a failure of the gateway is a 500 { error, code } in the hub's log with the error", async (t) => {
  const { log, lines } = logLines()
  const plan = buildPlan([sop('hook', [{ type: 'webhook', path: '/hooks/order' }])])
  // The engine's trigger throws (a store that fails under it): the firer passes the throw on.
  const firer = { fire: async () => Promise.reject(new Error('the store is closed')) } as unknown as Firer
  const gw = await startWebhookGateway(firer, log, { host: '127.0.0.1', port: 0, bodyLimit: 1024 }, plan)
  t.teardown(() => gw.stop())
  const res = await fetch(`${gw.url}/hooks/order`, { method: 'POST', body: 'x' })
  t.equal(res.status, 500)
  t.same(await res.json(), { error: 'internal error', code: 'INTERNAL' })
  t.match(
    lines.filter((l) => l.level >= 50),
    [{ level: 50, status: 500, url: '/hooks/order', err: { message: 'the store is closed' } }],
  )
})

t.test(
  'a trigger not recorded for want of disk is a 503 with Retry-After: the caller may try again',
  async (t) => {
    const full = recordingEngine(() => {
      throw new DiskRefusal('the disk is below its reserve')
    })
    const { gw } = await gateway(t, full)
    const res = await fetch(`${gw.url}/hooks/order`, { method: 'POST', body: 'x' })
    t.equal(res.status, 503)
    t.equal(res.headers.get('retry-after'), '60')
    t.same(await res.json(), {
      error: 'the hub is refusing new work: the disk is below its reserve',
      code: 'DISK_FULL',
    })
    t.equal(full.calls.length, 1)
  },
)
