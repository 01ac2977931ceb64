// The pure parts of the amqp trigger: topic-exchange matching (`*` one word, `#` zero or more),
// which delivery a message is, the URL as logs show it, and the `[amqp]` section of hub.toml.
import t from 'tap'
import { parseConfig } from '../../hub/daemon/config.ts'
import { silentLog } from '../../hub/log.ts'
import { amqpProblems, amqpWarnings, dispatchAmqp } from '../../hub/triggers/amqp.ts'
import { createFirer } from '../../hub/triggers/fire.ts'
import { buildPlan } from '../../hub/triggers/plan.ts'
import { matches } from '../../sops/conditions.ts'
import { deliveryKey } from '../../hub/triggers/amqp-delivery.ts'
import { routingKeyError, routingKeyMatches } from '../../hub/triggers/amqp-topic.ts'
import { maskUrl, withPassword } from '../../hub/triggers/amqp-url.ts'
import { recordingEngine, sop } from './fake-engine.ts'

t.test('routing keys match as a topic exchange routes', async (t) => {
  const cases: [string, string, boolean][] = [
    ['orders.created', 'orders.created', true],
    ['orders.created', 'orders.created.eu', false],
    ['orders.*', 'orders.created', true],
    ['orders.*', 'orders', false],
    ['orders.*', 'orders.a.b', false],
    ['*.*.alarm', 'plant.p1.alarm', true],
    ['orders.#', 'orders', true], // `#` matches zero words
    ['orders.#', 'orders.a.b.c', true],
    ['orders.#', 'ordersx', false],
    ['#', '', true],
    ['#', 'any.thing.at.all', true],
    ['#.end', 'end', true],
    ['#.end', 'a.b.end', true],
    ['#.end', 'a.b.end.x', false],
    ['a.#.z', 'a.z', true],
    ['a.#.z', 'a.b.c.z', true],
    ['a.#.z', 'a.b', false],
    ['a.*.#', 'a', false],
    ['a.*.#', 'a.b', true],
    ['#.#', 'x', true],
    ['a.#.#.b', 'a.b', true],
    ['a.b', 'a.B', false], // case matters, as in RabbitMQ
  ]
  for (const [pattern, key, want] of cases)
    t.equal(routingKeyMatches(pattern, key), want, `${pattern} vs "${key}"`)
  t.equal(routingKeyError('a'.repeat(255)), null)
  t.match(routingKeyError('a'.repeat(256)), /longer than 255 bytes/)
})

t.test('a delivery is its message id, else a hash checked only when redelivered', async (t) => {
  const base = {
    exchange: 'amq.topic',
    routingKey: 'a.b',
    redelivered: false,
    body: Buffer.from('{"x":1}'),
    properties: {},
  }
  t.same(deliveryKey({ ...base, properties: { messageId: 'm1' } }), {
    key: 'amqp-id:amq.topic:m1',
    check: true,
  })
  const h = deliveryKey(base)
  t.match(h, { key: /^amqp-sha256:[0-9a-f]{64}$/, check: false })
  t.equal(deliveryKey({ ...base, redelivered: true }).key, h.key, 'the redelivery has the same key')
  t.equal(deliveryKey({ ...base, redelivered: true }).check, true, 'and it is checked')
  t.not(deliveryKey({ ...base, body: Buffer.from('{"x":2}') }).key, h.key, 'another body, another key')
  t.not(deliveryKey({ ...base, routingKey: 'a.c' }).key, h.key, 'another routing key, another key')
  t.not(deliveryKey({ ...base, properties: { timestamp: 5 } }).key, h.key, 'another timestamp, another key')
  t.equal(
    deliveryKey({ ...base, properties: { headers: { a: 1, b: 2 } } }).key,
    deliveryKey({ ...base, properties: { headers: { b: 2, a: 1 } } }).key,
    'header order does not matter',
  )
})

t.test('URLs are logged masked; the password goes in only when connecting', async (t) => {
  t.equal(maskUrl('amqp://svc:s3cret@host:5672/vh'), 'amqp://svc:***@host:5672/vh')
  t.equal(maskUrl('amqp://host'), 'amqp://host')
  t.equal(maskUrl('not a url'), '(unparsable URL)')
  const w = withPassword('amqp://svc@host/vh', 'p@ss:/word', 'amqp.url')
  t.ok(w.ok)
  if (w.ok) {
    t.equal(decodeURIComponent(new URL(w.url).password), 'p@ss:/word')
    t.equal(w.shown, 'amqp://svc:***@host/vh')
  }
  t.match(withPassword('amqp://host', 'pw', 'amqp.url'), {
    ok: false,
    code: 'BAD_CONFIG',
    error: /names no user/,
  })
  t.match(withPassword('http://svc@host', undefined, 'amqp.url_env (X)'), {
    ok: false,
    code: 'BAD_CONFIG',
    error: /^amqp\.url_env \(X\): must start with amqp:\/\//,
  })
})

t.test('[amqp] in hub.toml: defaults, and errors naming the field', async (t) => {
  const ok = parseConfig('[amqp]\nurl = "amqp://svc@127.0.0.1:5672"\npassword_env = "AMQP_PW"\n', null, {})
  t.ok(ok.ok)
  if (ok.ok)
    t.match(ok.config.amqp, {
      url: { value: 'amqp://svc@127.0.0.1:5672' },
      password: { env: 'AMQP_PW' },
      exchange: 'amq.topic',
      queue: /^svc-hub-/,
      prefetch: 16,
    })
  const none = parseConfig('', null, {})
  t.equal(none.ok && none.config.amqp, null, 'no [amqp]: none')
  const bad: [string, RegExp][] = [
    ['[amqp]\nurl = "amqp://svc:pw@host"\n', /amqp\.url: holds a password; put it in amqp\.password_env/],
    ['[amqp]\nexchange = "x"\n', /amqp: needs exactly one of amqp\.url and amqp\.url_env/],
    ['[amqp]\nurl = "amqp://h"\nurl_env = "U"\n', /needs exactly one of amqp\.url and amqp\.url_env/],
    ['[amqp]\nurl = "http://h"\n', /amqp\.url: /],
    ['[amqp]\nurl = "amqp://h"\nprefetch = 0\n', /amqp\.prefetch: /],
    ['[amqp]\nurl = "amqp://h"\nqueue_name = "q"\n', /amqp\.queue_name: unknown field/],
    [
      '[amqp]\nurl = "amqp://h"\npassword_env = "P"\npassword_file = "/f"\n',
      /password_env and amqp\.password_file are alternatives/,
    ],
  ]
  for (const [toml, err] of bad) {
    const r = parseConfig(toml, '/etc/svc/hub.toml', {})
    t.notOk(r.ok, toml)
    if (!r.ok) t.match(r.error, err)
    if (!r.ok) t.match(r.error, /^\/etc\/svc\/hub\.toml: /)
  }
})

t.test('which SOPs a message starts; an unbindable routing key is an error at its line', async (t) => {
  const plan = buildPlan([
    sop('orders', [
      { type: 'amqp', routing_key: 'orders.*', condition: '$.total > 10' },
      { type: 'amqp', routing_key: 'orders.#', condition: '' },
    ]),
    sop('big', [{ type: 'amqp', routing_key: 'orders.eu', condition: '$.total > 100' }]),
    sop('long', [{ type: 'amqp', routing_key: `x.${'y'.repeat(300)}`, condition: '' }]),
  ])
  const firer = createFirer(recordingEngine(), matches, silentLog)
  t.same(dispatchAmqp(plan, firer, 'orders.eu', '{"total":500}'), ['big', 'orders'], 'each SOP once')
  t.same(dispatchAmqp(plan, firer, 'orders.eu', '{"total":50}'), ['orders'])
  t.same(dispatchAmqp(plan, firer, 'orders.eu', 'not json'), ['orders'], 'a $ condition on text: no match')
  t.same(dispatchAmqp(plan, firer, 'invoices.eu', '{"total":500}'), [])
  const problems = amqpProblems(plan)
  t.equal(problems.length, 1)
  t.match(problems[0], {
    file: '/sops/long/SOP.toml',
    line: Number,
    severity: 'error',
    message: /amqp trigger: routing_key is longer than 255 bytes/,
  })
  t.match(amqpWarnings(plan)[0], { message: /is inert: no \[amqp\] section in hub\.toml/ })
})
