// Whether a message on a topic would reach anybody on the embedded broker (real Aedes with
// LevelDB on loopback, real MQTT clients): subscriptions made, changed, removed and closed, the
// trigger filters, and what the hub's own publish drops for it and what it never drops.
import t from 'tap'
import type { AedesPublishPacket } from 'aedes'
import { directPublish } from '../../hub/broker/direct-publish.ts'
import { waitFor } from '../helpers/wait.ts'
import { startEmbeddedBroker } from './embedded-broker.ts'
import { client as connect } from './broker-auth-helpers.ts'

t.test(
  'a topic is heard while a client subscribes to it, and not once it unsubscribes or leaves',
  async (t) => {
    const broker = await startEmbeddedBroker(t)
    t.notOk(broker.heard('svc/runs/a/1'), 'nobody subscribes yet')

    const a = await connect(t, broker.url, { clientId: 'watch-a' })
    await a.subscribeAsync('svc/runs/#', { qos: 0 })
    t.ok(broker.heard('svc/runs/a/1'), 'a wildcard subscription hears the topic')
    t.notOk(broker.heard('svc/hub/state'), 'a topic outside the filter is not heard')

    // The same filter again with another QoS: Aedes removes the old listener and adds the new one.
    await a.subscribeAsync('svc/runs/#', { qos: 1 })
    t.ok(broker.heard('svc/runs/a/1'), 'still heard after the QoS changed')

    const b = await connect(t, broker.url, { clientId: 'watch-b' })
    await b.subscribeAsync('svc/runs/+/1', { qos: 0 })
    await a.unsubscribeAsync('svc/runs/#')
    t.ok(broker.heard('svc/runs/a/1'), "the other client's subscription still hears it")
    t.notOk(broker.heard('svc/runs/a/2'), 'only what the remaining filter matches')

    await b.endAsync()
    await waitFor(() => !broker.heard('svc/runs/a/1'), 'a closed connection takes its subscriptions along')
    t.pass('nobody hears it once both are gone')
  },
)

t.test('a persistent session that disconnects no longer hears QoS 0 messages', async (t) => {
  const broker = await startEmbeddedBroker(t)
  const c = await connect(t, broker.url, { clientId: 'keeper', clean: false })
  await c.subscribeAsync('plant/#', { qos: 1 })
  t.ok(broker.heard('plant/a'))
  await c.endAsync()
  // Aedes queues only QoS 1 and 2 messages for an offline session; a QoS 0 one would be lost anyway.
  await waitFor(() => !broker.heard('plant/a'), 'the offline session hears nothing live')
  t.pass('not heard while offline')
  // Back with the same session and no SUBSCRIBE: Aedes restores its subscriptions itself.
  const again = await connect(t, broker.url, { clientId: 'keeper', clean: false })
  t.ok(again, 'reconnected')
  await waitFor(() => broker.heard('plant/a'), 'the restored session hears again')
  t.pass('heard once the session is back')
})

t.test('the trigger filters are heard, and follow a change of the plan', async (t) => {
  const broker = await startEmbeddedBroker(t, { triggerFilters: ['in/+'] })
  t.ok(broker.heard('in/1'), 'a trigger topic is heard with no client at all')
  t.notOk(broker.heard('out/1'))
  broker.triggers.setFilters(['out/#'])
  t.notOk(broker.heard('in/1'), 'a filter the plan dropped is no longer heard')
  t.ok(broker.heard('out/1/x'))
})

t.test('a wildcard at the start of a filter does not hear $ topics (MQTT-4.7.2-1)', async (t) => {
  const broker = await startEmbeddedBroker(t)
  const c = await connect(t, broker.url)
  await c.subscribeAsync('#', { qos: 0 })
  t.ok(broker.heard('svc/runs/a/1'))
  t.notOk(broker.heard('$svc/x'), '# does not match a topic starting with $')
})

t.test(
  "the hub's own publish drops only QoS 0 messages that nobody hears and that are not retained",
  async (t) => {
    const broker = await startEmbeddedBroker(t)
    const published: string[] = []
    broker.aedes.on('publish', (packet: AedesPublishPacket, client) => {
      if (client === null && !packet.topic.startsWith('$SYS'))
        published.push(`${packet.topic} q${packet.qos}`)
    })
    const publish = directPublish(broker.aedes, broker.heard)

    await publish('svc/runs/a/1', 'x', { qos: 0, retain: false })
    t.same(published, [], 'an unheard QoS 0 message goes nowhere')

    await publish('svc/runs/a/2', 'x', { qos: 1, retain: false })
    await publish('svc/runs/a/3', 'x', { qos: 0, retain: true })
    t.same(
      published,
      ['svc/runs/a/2 q1', 'svc/runs/a/3 q0'],
      'QoS 1 and retained messages always reach the broker',
    )

    const late = await connect(t, broker.url)
    const got: string[] = []
    late.on('message', (topic, payload) => got.push(`${topic}=${payload}`))
    await late.subscribeAsync('svc/runs/#', { qos: 0 })
    await waitFor(() => got.length === 1, 'the retained message reaches a later subscriber')
    t.same(got, ['svc/runs/a/3=x'], 'the retained one is kept for whoever subscribes later')

    await publish('svc/runs/a/4', 'y', { qos: 0, retain: false })
    await waitFor(() => got.length === 2, 'a heard QoS 0 message is delivered')
    t.same(got.at(-1), 'svc/runs/a/4=y')
  },
)
