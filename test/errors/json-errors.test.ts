// The one error path every server installs (errors/fastify.ts), on a real Fastify with a real
// pino logger: what each kind of failure answers, and that a 5xx is logged with its error.
import Fastify from 'fastify'
import t from 'tap'
import { CodedError, ERROR_STATUS, codeOfStatus } from '../../errors/codes.ts'
import { installJsonErrors, namedValidationMessage } from '../../errors/fastify.ts'
import { logLines } from '../helpers/log-lines.ts'

async function server(
  t: { teardown(fn: () => unknown): void },
  o: Parameters<typeof installJsonErrors>[2] = {},
) {
  const { log, lines } = logLines()
  const app = Fastify({ logger: false, ajv: { customOptions: { removeAdditional: false } } })
  installJsonErrors(app, log, o)
  app.get('/boom', async () => {
    throw new Error('disk on fire')
  })
  app.get('/gone', async () => {
    throw new CodedError('RUN_NOT_FOUND', 'no run with id "x"')
  })
  app.get('/chain', async () => {
    throw new CodedError('UNREACHABLE', 'chain unreachable: connection refused')
  })
  app.post(
    '/things',
    {
      schema: {
        body: {
          type: 'object',
          properties: { state: { type: 'string', enum: ['on', 'off'] } },
          additionalProperties: false,
        },
      },
    },
    async () => ({ ok: true }),
  )
  t.teardown(() => app.close())
  return { app, lines }
}

t.test('the code table: every code an error status, a status names its generic code first', async (t) => {
  for (const [code, status] of Object.entries(ERROR_STATUS))
    t.ok(status >= 400 && status < 600, `${code} → ${status}`)
  t.equal(codeOfStatus(404), 'NOT_FOUND')
  t.equal(codeOfStatus(409), 'CONFLICT')
  t.equal(codeOfStatus(400), 'BAD_INPUT')
  t.equal(codeOfStatus(418), undefined)
})

t.test('a thrown error is a 500 `internal error`, logged with the error object', async (t) => {
  const { app, lines } = await server(t)
  const r = await app.inject({ method: 'GET', url: '/boom?x=1' })
  t.equal(r.statusCode, 500)
  t.same(r.json(), { error: 'internal error', code: 'INTERNAL' })
  t.equal(lines.length, 1)
  t.match(lines[0], {
    level: 50,
    msg: 'GET /boom answered 500',
    status: 500,
    code: 'INTERNAL',
    url: '/boom',
    err: { type: 'Error', message: 'disk on fire', stack: /json-errors\.test\.ts/ },
  })
})

t.test("a coded error answers its code's status; a 5xx one keeps its message and is logged", async (t) => {
  const { app, lines } = await server(t)
  const gone = await app.inject({ method: 'GET', url: '/gone' })
  t.equal(gone.statusCode, 404)
  t.same(gone.json(), { error: 'no run with id "x"', code: 'RUN_NOT_FOUND' })
  t.equal(lines.length, 0, 'a refusal is not a failure of the server: not logged')
  const chain = await app.inject({ method: 'GET', url: '/chain' })
  t.equal(chain.statusCode, 502)
  t.same(chain.json(), { error: 'chain unreachable: connection refused', code: 'UNREACHABLE' })
  t.match(lines, [{ level: 50, status: 502, err: { message: 'chain unreachable: connection refused' } }])
})

t.test('schema failures are 400 BAD_INPUT naming the field; unknown routes 404 NOT_FOUND', async (t) => {
  const plain = await server(t)
  const bad = await plain.app.inject({ method: 'POST', url: '/things', payload: { state: 'up' } })
  t.equal(bad.statusCode, 400)
  t.same(bad.json(), { error: 'body/state must be equal to one of the allowed values', code: 'BAD_INPUT' })
  const named = await server(t, { validationMessage: namedValidationMessage })
  const enumBad = await named.app.inject({ method: 'POST', url: '/things', payload: { state: 'up' } })
  t.same(enumBad.json(), {
    error: 'body/state must be equal to one of the allowed values (on, off)',
    code: 'BAD_INPUT',
  })
  const extra = await named.app.inject({ method: 'POST', url: '/things', payload: { bogus: 1 } })
  t.same(extra.json(), { error: 'body must NOT have additional properties: "bogus"', code: 'BAD_INPUT' })
  const notJson = await plain.app.inject({
    method: 'POST',
    url: '/things',
    headers: { 'content-type': 'application/json' },
    payload: '{nope',
  })
  t.equal(notJson.statusCode, 400)
  t.equal(notJson.json().code, 'BAD_INPUT')
  const none = await plain.app.inject({ method: 'DELETE', url: '/nothing?q=1' })
  t.equal(none.statusCode, 404)
  t.same(none.json(), { error: 'no route DELETE /nothing', code: 'NOT_FOUND' })
  t.same(plain.lines, [])
})

t.test('a server that answers with pages sends the same answer its own way, and still logs', async (t) => {
  const { app, lines } = await server(t, {
    send: (reply, a) => reply.type('text/html').send(`<p>${a.status} ${a.code}: ${a.error}</p>`),
  })
  const r = await app.inject({ method: 'GET', url: '/boom' })
  t.equal(r.statusCode, 500)
  t.equal(r.body, '<p>500 INTERNAL: internal error</p>')
  t.match(lines, [{ level: 50, err: { message: 'disk on fire' } }])
})
