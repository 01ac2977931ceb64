// The step tools against real services: a real Aedes for mqtt_publish, a real Fastify server for
// http_request; board_send against a port that answers like the bridge.
import t from 'tap'
import mqtt from 'mqtt'
import Fastify from 'fastify'
import Value from 'typebox/value'
import { createBoardSend, type BoardPort } from '../../tools/board_send.ts'
import { createHttpRequest } from '../../tools/http_request.ts'
import { createMqttPublish } from '../../tools/mqtt_publish.ts'
import { buildToolRegistry } from '../../tools/registry.ts'
import { createWait } from '../../tools/wait.ts'
import type { ToolContext } from '../../tools/types.ts'
import type { Json } from '../../sops/types.ts'
import { startEmbeddedBroker } from './embedded-broker.ts'

function ctx(signal: AbortSignal = new AbortController().signal): ToolContext {
  return { runId: 'r1', sop: 's', step: 1, call: 0, idempotencyKey: 'r1:1:0', signal }
}

t.test('every tool declares a schema that rejects bad arguments', async (t) => {
  const reg = buildToolRegistry({
    publish: async () => undefined,
    boards: { send: async () => ({ ok: true }) },
  })
  if (!reg.ok) throw new Error(reg.error)
  t.same([...reg.tools.keys()].sort(), ['board_send', 'http_request', 'mqtt_publish', 'wait'])
  const bad: [string, unknown][] = [
    ['board_send', { board: 'b' }],
    ['board_send', { board: 'a/b', cmd: 'x' }],
    ['board_send', { board: 'b', cmd: 'Bad Cmd' }],
    ['mqtt_publish', { payload: 'x' }],
    ['mqtt_publish', { topic: 't', payload: 1, qos: 3 }],
    ['wait', { ms: -1 }],
    ['wait', { minutes: 1 }],
    ['http_request', { url: 'http://x', method: 'BREW' }],
    ['http_request', { url: 'http://x', headers: { a: 1 } }],
  ]
  for (const [name, args] of bad)
    t.notOk(Value.Check(reg.tools.get(name)!.schema, args), `${name} ${JSON.stringify(args)}`)
  t.ok(Value.Check(reg.tools.get('board_send')!.schema, { board: 'vend1', cmd: 'vend', args: { slot: 3 } }))
  t.ok(Value.Check(reg.tools.get('wait')!.schema, { seconds: 0.5 }))
})

t.test(
  'the registry never lets a later tool replace an earlier one; http_request can be left out',
  async (t) => {
    const dup = buildToolRegistry({ publish: async () => undefined, extra: [createWait()] })
    t.same(dup, { ok: false, code: 'INTERNAL', error: 'tool "wait" is registered twice' })
    const offline = buildToolRegistry({ publish: async () => undefined, http: false })
    t.ok(offline.ok && !offline.tools.has('http_request') && !offline.tools.has('board_send'))
  },
)

t.test('mqtt_publish publishes on a real broker; wildcards and oversize are refused', async (t) => {
  const broker = await startEmbeddedBroker(t)
  const pubClient = await mqtt.connectAsync(broker.url, { reconnectPeriod: 0 })
  const sub = await mqtt.connectAsync(broker.url, { reconnectPeriod: 0 })
  t.teardown(async () => {
    await pubClient.endAsync(true)
    await sub.endAsync(true)
  })
  await sub.subscribeAsync('out/#', { qos: 1 })
  const got = new Promise<[string, string]>((resolve) =>
    sub.once('message', (tp, p) => resolve([tp, p.toString()])),
  )
  const tool = createMqttPublish(async (topic, payload, o) => {
    await pubClient.publishAsync(topic, payload, o)
  })
  t.same(await tool.run({ topic: 'out/vend1', payload: { slot: 3 } }, ctx()), {
    ok: true,
    output: { topic: 'out/vend1', bytes: 10 },
  })
  t.same(await got, ['out/vend1', '{"slot":3}'])
  t.match(await tool.run({ topic: 'out/+', payload: 'x' }, ctx()), {
    ok: false,
    code: 'BAD_INPUT',
    error: /wildcard/,
  })
  t.match(await tool.run({ topic: 'out/big', payload: 'x'.repeat(300 * 1024) }, ctx()), {
    ok: false,
    code: 'TOO_LARGE',
    error: /more than/,
  })
  const failing = createMqttPublish(async () => {
    throw new Error('client disconnecting')
  })
  t.same(await failing.run({ topic: 'a', payload: 'x' }, ctx()), {
    ok: false,
    code: 'UNREACHABLE',
    error: 'mqtt_publish a: client disconnecting',
  })
})

t.test('mqtt_publish run again after a restart says it may repeat (output and port)', async (t) => {
  const seen: { repeat?: boolean }[] = []
  const tool = createMqttPublish(async (_topic, _payload, o) => {
    seen.push(o)
  })
  t.same(await tool.run({ topic: 'out/1', payload: 'x' }, ctx()), {
    ok: true,
    output: { topic: 'out/1', bytes: 1 },
  })
  t.same(await tool.run({ topic: 'out/1', payload: 'x' }, { ...ctx(), repeat: true }), {
    ok: true,
    output: { topic: 'out/1', bytes: 1, repeat: true },
  })
  t.same(
    seen.map((o) => o.repeat),
    [undefined, true],
  )
})

t.test("board_send: the board's reply is the output; errors and timeouts are values", async (t) => {
  const seen: unknown[] = []
  const port: BoardPort = {
    async send(board, cmd, args, opts) {
      seen.push([board, cmd, args, opts.timeoutMs])
      if (cmd === 'fail') return { ok: false, error: 'slot empty' }
      if (cmd === 'late') return { ok: false, error: 'no answer', code: 'timeout' }
      if (cmd === 'slow') throw new Error(`no reply within ${opts.timeoutMs} ms`)
      return { ok: true, result: { vended: (args as { slot: number }).slot } }
    },
  }
  const tool = createBoardSend(port, { timeoutMs: 1234 })
  t.same(await tool.run({ board: 'vend1', cmd: 'vend', args: { slot: 3 } } as unknown as Json, ctx()), {
    ok: true,
    output: { vended: 3 },
  })
  t.same(await tool.run({ board: 'vend1', cmd: 'fail' }, ctx()), {
    ok: false,
    code: 'UPSTREAM_FAILED',
    error: 'board vend1 answered fail with an error: slot empty',
  })
  // The bridge's own reason becomes the code (bridge/types.ts, SendFailure).
  t.same(await tool.run({ board: 'vend1', cmd: 'late' }, ctx()), {
    ok: false,
    code: 'TIMEOUT',
    error: 'board vend1 answered late with an error: no answer',
  })
  t.same(await tool.run({ board: 'vend1', cmd: 'slow', timeout_ms: 5 }, ctx()), {
    ok: false,
    code: 'UNREACHABLE',
    error: 'board_send vend1 slow: no reply within 5 ms',
  })
  t.same(seen, [
    ['vend1', 'vend', { slot: 3 }, 1234],
    ['vend1', 'fail', {}, 1234],
    ['vend1', 'late', {}, 1234],
    ['vend1', 'slow', {}, 5],
  ])
})

t.test('wait: exactly one of ms/seconds, and a cancelled run stops waiting', async (t) => {
  const tool = createWait()
  t.same(await tool.run({ ms: 5 }, ctx()), { ok: true, output: { waited_ms: 5 } })
  t.same(await tool.run({ seconds: 0.01 }, ctx()), { ok: true, output: { waited_ms: 10 } })
  t.match(await tool.run({}, ctx()), { ok: false, error: /exactly one/ })
  t.match(await tool.run({ ms: 1, seconds: 1 }, ctx()), { ok: false, error: /exactly one/ })
  const ac = new AbortController()
  const p = tool.run({ ms: 60_000 }, ctx(ac.signal))
  ac.abort()
  t.same(await p, { ok: false, code: 'CANCELLED', error: 'wait: cancelled' })
})

t.test('http_request against a real server: JSON, text, status as a result, caps and timeouts', async (t) => {
  const app = Fastify()
  app.post('/echo', async (req) => ({ got: req.body }))
  app.get('/text', async (_req, reply) => reply.type('text/plain').send('plain'))
  app.get('/missing', async (_req, reply) => reply.code(404).send({ error: 'nope' }))
  app.get('/big', async (_req, reply) => reply.type('text/plain').send('x'.repeat(4096)))
  app.get('/slow', async () => new Promise((r) => setTimeout(() => r({ late: true }), 2000)))
  const base = await app.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => app.close())
  const tool = createHttpRequest({ timeoutMs: 5000, maxResponseBytes: 1024 })
  t.match(await tool.run({ url: `${base}/echo`, body: { a: 1 } }, ctx()), {
    ok: true,
    output: { status: 200, body: { got: { a: 1 } } },
  })
  t.match(await tool.run({ url: `${base}/text` }, ctx()), {
    ok: true,
    output: { status: 200, body: 'plain' },
  })
  t.match(await tool.run({ url: `${base}/missing` }, ctx()), {
    ok: true,
    output: { status: 404, body: { error: 'nope' } },
  })
  t.match(await tool.run({ url: `${base}/big` }, ctx()), {
    ok: false,
    code: 'TOO_LARGE',
    error: /larger than 1024 bytes/,
  })
  t.match(await tool.run({ url: `${base}/slow`, timeout_ms: 50 }, ctx()), {
    ok: false,
    code: 'TIMEOUT',
    error: /no answer within 50 ms/,
  })
  t.match(await tool.run({ url: 'file:///etc/passwd' }, ctx()), {
    ok: false,
    code: 'BAD_INPUT',
    error: /not http or https/,
  })
  t.match(await tool.run({ url: 'not a url' }, ctx()), {
    ok: false,
    code: 'BAD_INPUT',
    error: /not a valid URL/,
  })
  t.match(await tool.run({ url: `${base}/text`, method: 'GET', body: 'x' }, ctx()), {
    ok: false,
    code: 'BAD_INPUT',
    error: /cannot have a body/,
  })
  const dead = await tool.run({ url: 'http://127.0.0.1:1/' }, ctx())
  t.match(dead, {
    ok: false,
    code: 'UNREACHABLE',
    error: /http_request GET http:\/\/127.0.0.1:1\/: fetch failed/,
  })
})
