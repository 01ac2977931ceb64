// Once-only admission of amqp deliveries, with a real RabbitMQ and a real child hub killed by pid
// (SIGKILL) after a delivery's admission is stored and before its ack: the broker redelivers it to
// the hub started again on the same folder, which acknowledges it without a second run. With a
// message id and without one (a hash of the delivery, checked because it comes back redelivered).
import t from 'tap'
import { spawn } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { rabbitmqMissing, startRabbitmq } from '../helpers/rabbitmq.ts'
import { tempDir } from '../helpers/tmp.ts'
import { waitFor } from '../helpers/wait.ts'
import { publisher, recordingLog, startAmqpParts, startedPayloads, writeAmqpSop } from './amqp-world.ts'

const child = fileURLToPath(new URL('./amqp-hub-child.ts', import.meta.url))
const missing = rabbitmqMissing()
if (missing) console.log(`# amqp crash tests skipped: ${missing}`)
const broker = missing ? null : await startRabbitmq(t)
const skip = missing ? { skip: missing } : {}

for (const variant of [
  { name: 'with a message id', props: { messageId: 'order-17' } },
  { name: 'without a message id', props: {} },
]) {
  t.test(`hub SIGKILLed between admission and ack, ${variant.name}: exactly one run`, skip, async (t) => {
    const dir = await tempDir(t, 'svc-amqp-crash-')
    const queue = `svc-test-crash-${variant.name.replace(/\W+/g, '-')}`
    await writeAmqpSop(join(dir, 'sops'), 'once', [{ routing_key: 'crash.#' }])
    const proc = spawn(process.execPath, ['--import', 'tsx', child, dir, broker!.urlWithPassword, queue], {
      stdio: ['ignore', 'inherit', 'inherit'],
    })
    let exited = false
    proc.on('exit', () => (exited = true))
    t.teardown(() => {
      if (!exited && proc.pid) process.kill(proc.pid, 'SIGKILL')
    })
    await waitFor(() => existsSync(join(dir, 'consuming')) || exited, 'the child hub to consume', {
      timeoutMs: 60_000,
    })
    t.notOk(exited, 'the child hub is running')

    const pub = await publisher(t, broker!.urlWithPassword)
    await pub.publish('crash.order', '{"order":17}', variant.props)
    await waitFor(() => existsSync(join(dir, 'recorded')) || exited, 'the admission to be stored')
    const recorded = JSON.parse(readFileSync(join(dir, 'recorded'), 'utf8')) as {
      results: { ok: boolean; decision: { outcome: string; runId: string } }[]
    }
    t.match(recorded.results, [{ ok: true, decision: { outcome: 'started' } }], 'the child admitted it')

    process.kill(proc.pid!, 'SIGKILL')
    await waitFor(() => exited, 'the child to die')
    await waitFor(
      async () => (await pub.channel.checkQueue(queue)).messageCount === 1,
      'the unacknowledged message to be back in the queue',
    )

    const log = recordingLog()
    const again = await startAmqpParts(dir, broker!.urlWithPassword, queue, log)
    t.teardown(() => again.close())
    await waitFor(
      () => log.lines.some((l) => l.msg === 'amqp redelivery already admitted: not started again'),
      'the redelivery to be recognised',
    )
    await waitFor(
      async () => (await pub.channel.checkQueue(queue)).messageCount === 0,
      'the redelivery to be acknowledged',
    )
    await again.engine.idle()
    const runs = await again.engine.listRuns({ sop: 'once' })
    t.equal(runs.length, 1, 'exactly one run')
    t.equal(runs[0]?.id, recorded.results[0]!.decision.runId, "it is the killed hub's run")
    t.equal(runs[0]?.state, 'completed', 'resumed and completed after the restart')
    // The queue is empty and nothing is waiting unacknowledged: a fresh consumer gets nothing.
    t.equal(await pub.channel.get(queue), false)
  })
}

t.test('a publisher resending a message id starts one run; a new id starts another', skip, async (t) => {
  const dir = await tempDir(t, 'svc-amqp-resend-')
  await writeAmqpSop(join(dir, 'sops'), 'resend', [{ routing_key: 'resend.*' }])
  const parts = await startAmqpParts(dir, broker!.urlWithPassword, 'svc-test-resend', recordingLog())
  t.teardown(() => parts.close())
  await waitFor(() => parts.router.amqpConsuming(), 'the hub to consume')
  const pub = await publisher(t, broker!.urlWithPassword)
  await pub.publish('resend.x', 'first', { messageId: 'm-1' })
  await pub.publish('resend.x', 'first again', { messageId: 'm-1' })
  await pub.publish('resend.x', 'second', { messageId: 'm-2' })
  // Without an id and not redelivered: two identical messages are two triggers.
  await pub.publish('resend.x', 'same')
  await pub.publish('resend.x', 'same')
  await waitFor(async () => (await startedPayloads(parts.engine, 'resend')).length >= 4, 'four runs')
  await waitFor(
    async () => (await pub.channel.checkQueue('svc-test-resend')).messageCount === 0,
    'every message to be taken',
  )
  // Stopping waits for the deliveries still being admitted, so a second run would be here now.
  await parts.stopTriggers()
  await parts.engine.idle()
  t.same((await startedPayloads(parts.engine, 'resend')).sort(), ['first', 'same', 'same', 'second'])
})
