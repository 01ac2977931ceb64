// amqp triggers against a real RabbitMQ started by this file (test/helpers/rabbitmq.ts) and a real
// hub (startHub: embedded broker, engine on LevelDB, trigger router): routing keys with `*` and
// `#` (zero words too), conditions over the body, bad bodies, the hub and the broker going away
// and coming back, an unreachable broker, and the warning when `[amqp]` is missing.
import t, { type Test } from 'tap'
import { chmod, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { parseConfig } from '../../hub/daemon/config.ts'
import { type RunningHub, startHub } from '../../hub/daemon/hub.ts'
import { freePort } from '../helpers/ports.ts'
import { rabbitmqMissing, startRabbitmq } from '../helpers/rabbitmq.ts'
import { tempDir } from '../helpers/tmp.ts'
import { waitFor } from '../helpers/wait.ts'
import { type RecordingLog, publisher, recordingLog, startedPayloads, writeAmqpSop } from './amqp-world.ts'

const missing = rabbitmqMissing()
if (missing) console.log(`# amqp tests skipped: ${missing}`)
// One broker for the file: it takes seconds to start.
const broker = missing ? null : await startRabbitmq(t)
const skip = missing ? { skip: missing } : {}

const PASSWORD_ENV = 'SVC_TEST_AMQP_PASSWORD'
if (broker) process.env[PASSWORD_ENV] = broker.password

async function hubWith(t: Test, home: string, amqpToml: string, log: RecordingLog): Promise<RunningHub> {
  const cfg = parseConfig(
    [
      '[hub]',
      `sops_dir = "${join(home, 'sops')}"`,
      `data_dir = "${join(home, 'data')}"`,
      '[broker]',
      'port = 0',
      '[webhook]',
      'enabled = false',
      amqpToml,
    ].join('\n'),
    null,
    { SVC_HOME: home },
  )
  if (!cfg.ok) throw new Error(cfg.error)
  const hub = await startHub(cfg.config, log)
  t.teardown(() => hub.close())
  return hub
}

const amqpSection = (queue: string, extra = ''): string =>
  `[amqp]\nurl = "${broker?.url}"\npassword_env = "${PASSWORD_ENV}"\nqueue = "${queue}"\n${extra}`

t.test('fire, condition and wildcard routing keys', skip, async (t) => {
  const home = await tempDir(t)
  const sops = join(home, 'sops')
  await writeAmqpSop(sops, 'fire', [{ routing_key: 'orders.created' }])
  await writeAmqpSop(sops, 'cond', [{ routing_key: 'temps.#', condition: '$.t > 30' }])
  await writeAmqpSop(sops, 'star', [{ routing_key: 'plant.*.alarm' }])
  await writeAmqpSop(sops, 'hash', [{ routing_key: 'audit.#' }])
  await writeAmqpSop(sops, 'middle', [{ routing_key: 'a.#.z' }])
  // Two triggers of one SOP matching one message start one run (sop-format: any one starts a run).
  await writeAmqpSop(sops, 'twice', [{ routing_key: 'dup.*' }, { routing_key: 'dup.#' }])
  const log = recordingLog()
  const hub = await hubWith(t, home, amqpSection('svc-test-fire'), log)
  await waitFor(() => hub.router.amqpConsuming(), 'the hub to consume its queue')
  const pub = await publisher(t, broker!.urlWithPassword)

  // Published in this order: what must not start a run goes before what must, on the same queue,
  // so once the last run is there every earlier message has been dispatched.
  await pub.publish('orders.created', '{"id":1}')
  await pub.publish('orders.created.late', '{"id":2}')
  await pub.publish('temps.room1', '{"t":10}')
  await pub.publish('temps.room1', 'hot') // not JSON: a `$` condition does not match
  await pub.publish('temps.room1', '[1,')
  await pub.publish('temps.room1.probe', '{"t":31}')
  await pub.publish('plant.alarm', 'p0')
  await pub.publish('plant.p1.x.alarm', 'p1x')
  await pub.publish('plant.p1.alarm', 'p1')
  await pub.publish('audit', 'zero words')
  await pub.publish('audit.a.b', 'two words')
  await pub.publish('a.b', 'no z')
  await pub.publish('a.z', 'zero between')
  await pub.publish('a.b.c.z', 'two between')
  await pub.publish('dup.x', 'once')

  const want: Record<string, unknown[]> = {
    // The payload as received (text); step 1 reads it as JSON when it parses (sops/RUNTIME.md, "Step input and output").
    fire: ['{"id":1}'],
    cond: ['{"t":31}'],
    star: ['p1'],
    hash: ['zero words', 'two words'],
    middle: ['zero between', 'two between'],
    twice: ['once'],
  }
  for (const [sop, payloads] of Object.entries(want)) {
    await waitFor(
      async () => (await startedPayloads(hub.engine, sop)).length >= payloads.length,
      `${payloads.length} run(s) of ${sop}`,
    )
  }
  await hub.engine.idle()
  for (const [sop, payloads] of Object.entries(want))
    t.same((await startedPayloads(hub.engine, sop)).sort(), [...payloads].sort(), `runs of ${sop}`)

  const text = log.text()
  t.notOk(text.includes(broker!.password), 'the password is never logged')
  t.match(text, /amqp consuming/)
  t.notOk(
    log.lines.some((l) => l.level === 'error'),
    'no errors logged',
  )
  const q = await pub.channel.checkQueue('svc-test-fire')
  t.equal(q.messageCount, 0, 'every message was acknowledged')
})

t.test('messages published while the hub is down are delivered when it returns', skip, async (t) => {
  const home = await tempDir(t)
  await writeAmqpSop(join(home, 'sops'), 'away', [{ routing_key: 'away.*' }])
  // An exchange of our own (declared by the hub, durable) instead of amq.topic.
  const section = amqpSection('svc-test-away', 'exchange = "svc.test.away"\n')
  const first = await hubWith(t, home, section, recordingLog())
  await waitFor(() => first.router.amqpConsuming(), 'the first hub to consume')
  await first.close()

  const pub = await publisher(t, broker!.urlWithPassword, 'svc.test.away')
  for (let i = 0; i < 5; i++) await pub.publish('away.n', JSON.stringify({ n: i }))

  const again = await hubWith(t, home, section, recordingLog())
  await waitFor(async () => (await startedPayloads(again.engine, 'away')).length >= 5, 'five runs of away')
  await again.engine.idle()
  t.same(
    ((await startedPayloads(again.engine, 'away')) as string[]).map((p) => JSON.parse(p).n).sort(),
    [0, 1, 2, 3, 4],
    'each message published while the hub was down started one run',
  )
})

t.test('broker restarted: the hub reconnects and gets what was published meanwhile', skip, async (t) => {
  const home = await tempDir(t)
  await writeAmqpSop(join(home, 'sops'), 'restart', [{ routing_key: 'restart.#' }])
  const log = recordingLog()
  const hub = await hubWith(t, home, amqpSection('svc-test-restart'), log)
  await waitFor(() => hub.router.amqpConsuming(), 'the hub to consume')
  const before = await publisher(t, broker!.urlWithPassword)
  await before.publish('restart.before', 'before')
  await waitFor(async () => (await startedPayloads(hub.engine, 'restart')).length === 1, 'the first run')
  await before.close()

  await broker!.stop()
  await waitFor(() => !hub.router.amqpConsuming(), 'the hub to see the broker gone')
  await broker!.start()
  // Published as soon as the broker is back, whether or not the hub has reconnected yet.
  const after = await publisher(t, broker!.urlWithPassword)
  await after.publish('restart.after', 'after 1')
  await after.publish('restart.after.more', 'after 2')
  await waitFor(async () => (await startedPayloads(hub.engine, 'restart')).length >= 3, 'three runs', {
    timeoutMs: 90_000,
  })
  await hub.engine.idle()
  // Deliveries are admitted concurrently (prefetch), so the order of runs is not the order sent.
  t.same((await startedPayloads(hub.engine, 'restart')).sort(), ['after 1', 'after 2', 'before'])
  t.match(log.text(), /amqp connection lost; reconnecting/)
  const errors = log.lines.filter((l) => l.level === 'error')
  t.same(errors, [], 'no errors logged')
  t.ok(hub.router.amqpConsuming(), 'consuming again')
})

// No broker needed: nothing listens on the port.
t.test('an unreachable broker is logged with the URL masked and retried; the hub runs on', async (t) => {
  const home = await tempDir(t)
  await writeAmqpSop(join(home, 'sops'), 'nobody', [{ routing_key: 'x.#' }])
  const secretFile = join(home, 'amqp-password')
  await writeFile(secretFile, 's3cret-pass\n')
  await chmod(secretFile, 0o600)
  const port = await freePort()
  const log = recordingLog()
  const hub = await hubWith(
    t,
    home,
    `[amqp]\nurl = "amqp://svc@127.0.0.1:${port}/plant"\npassword_file = "${secretFile}"\n`,
    log,
  )
  const attempts = () => log.lines.filter((l) => l.msg === 'cannot consume from the AMQP broker; retrying')
  await waitFor(() => attempts().length >= 2, 'two failed attempts')
  t.equal(hub.router.amqpConsuming(), false)
  t.match(attempts()[0]!.obj, { url: `amqp://svc:***@127.0.0.1:${port}/plant` }, 'the URL is logged masked')
  t.notOk(log.text().includes('s3cret-pass'), 'the password is never logged')
  t.ok(hub.engine, 'the hub is up')
})

t.test('a password file others can read is refused, naming the fix', async (t) => {
  const home = await tempDir(t)
  const secretFile = join(home, 'amqp-password')
  await writeFile(secretFile, 'pw\n')
  await chmod(secretFile, 0o644)
  await t.rejects(
    hubWith(
      t,
      home,
      `[amqp]\nurl = "amqp://svc@127.0.0.1:1"\npassword_file = "${secretFile}"\n`,
      recordingLog(),
    ),
    /amqp\.password_file: .* has mode 0644, readable by others; run chmod 600/,
  )
})

t.test('without [amqp], an amqp SOP is named once at start, with its line', async (t) => {
  const home = await tempDir(t)
  await writeAmqpSop(join(home, 'sops'), 'inert', [{ routing_key: 'inert.#' }])
  const log = recordingLog()
  await hubWith(t, home, '', log)
  const warned = log.lines.filter((l) => /amqp trigger .*"inert" is inert: no \[amqp\] section/.test(l.msg))
  t.equal(warned.length, 1)
  t.match(warned[0]!.msg, /SOP\.toml:8: /)
})
