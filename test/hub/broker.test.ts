// Real Aedes on loopback with LevelDB persistence: retained messages and QoS 1 messages for an
// offline persistent session survive a broker restart.
import t from 'tap'
import { join } from 'node:path'
import mqtt from 'mqtt'
import { clientErrorLevel, startBroker } from '../../hub/broker/broker.ts'
import { directPublish } from '../../hub/broker/direct-publish.ts'
import { createMqttPublish } from '../../tools/mqtt_publish.ts'
import { silentLog } from '../../hub/log.ts'
import { tempDir } from '../helpers/tmp.ts'
import { startEmbeddedBroker } from './embedded-broker.ts'

function nextMessage(client: mqtt.MqttClient, topic: string): Promise<{ payload: string; retain: boolean }> {
  return new Promise((resolve) => {
    const on = (tp: string, payload: Buffer, packet: mqtt.IPublishPacket): void => {
      if (tp !== topic) return
      client.off('message', on)
      resolve({ payload: payload.toString(), retain: packet.retain })
    }
    client.on('message', on)
  })
}

/** What a new client subscribing to `topic` gets first: the retained message, if any. */
async function retainedOn(url: string, topic: string): Promise<{ payload: string; retain: boolean }> {
  const fresh = await mqtt.connectAsync(url, { reconnectPeriod: 0 })
  const retained = nextMessage(fresh, topic)
  await fresh.subscribeAsync(topic, { qos: 1 })
  const r = await retained
  await fresh.endAsync()
  return r
}

t.test('retained and queued QoS 1 messages survive a restart', async (t) => {
  const dbPath = join(await tempDir(t), 'broker')
  let broker = await startEmbeddedBroker(t, { dbPath })

  // A persistent session subscribes, then goes away.
  const sub = await mqtt.connectAsync(broker.url, { clientId: 'keeper', clean: false, reconnectPeriod: 0 })
  await sub.subscribeAsync('jobs/#', { qos: 1 })
  await sub.endAsync()

  // Availability is the hub's alone (hub/broker/acl.ts), so the hub's own login publishes it.
  const pub = await mqtt.connectAsync(broker.url, { reconnectPeriod: 0, ...broker.hubLogin })
  await pub.publishAsync('boards/vend1/availability', 'online', { qos: 1, retain: true })
  await pub.publishAsync('jobs/1', 'queued-while-away', { qos: 1 })
  await pub.endAsync()

  await broker.close()
  broker = await startEmbeddedBroker(t, { dbPath })

  const back = await mqtt.connectAsync(broker.url, {
    clientId: 'keeper',
    clean: false,
    reconnectPeriod: 0,
    manualConnect: false,
  })
  const queued = await nextMessage(back, 'jobs/1')
  t.equal(queued.payload, 'queued-while-away')
  await back.endAsync()

  t.same(await retainedOn(broker.url, 'boards/vend1/availability'), { payload: 'online', retain: true })
})

t.test('MQTT over WebSocket reaches the same broker', async (t) => {
  const broker = await startEmbeddedBroker(t, { wsPort: 0 })
  t.ok(broker.wsUrl)
  const ws = await mqtt.connectAsync(broker.wsUrl as string, { reconnectPeriod: 0 })
  const tcp = await mqtt.connectAsync(broker.url, { reconnectPeriod: 0 })
  await ws.subscribeAsync('x/y', { qos: 1 })
  const got = nextMessage(ws, 'x/y')
  await tcp.publishAsync('x/y', 'hello', { qos: 1 })
  t.equal((await got).payload, 'hello')
  await ws.endAsync()
  await tcp.endAsync()
})

t.test('a port in use is an error, and nothing is left open', async (t) => {
  const dir = await tempDir(t)
  const a = await startEmbeddedBroker(t)
  await t.rejects(
    startBroker({ host: '127.0.0.1', port: a.port, wsPort: null, dbPath: join(dir, 'b'), log: silentLog }),
    /EADDRINUSE/,
  )
})

t.test('garbage on the MQTT port does not take the broker down', async (t) => {
  const broker = await startEmbeddedBroker(t)
  const { connect } = await import('node:net')
  await new Promise<void>((resolve) => {
    const s = connect(broker.port, '127.0.0.1', () => {
      s.write(Buffer.from([0xff, 0xff, 0xff, 0xff, 0x01, 0x02, 0x03]))
    })
    s.on('close', () => resolve())
    s.on('error', () => resolve())
  })
  const c = await mqtt.connectAsync(broker.url, { reconnectPeriod: 0 })
  t.ok(c.connected, 'still accepts clients after a bad one')
  await c.endAsync()
})

t.test('a client that hangs up is routine (debug); any other client error is a warning', async (t) => {
  t.equal(clientErrorLevel('connection closed'), 'debug')
  t.equal(clientErrorLevel('Invalid header flag bits, must be 0x0 for auth packet'), 'warn')
  t.equal(clientErrorLevel('keep alive timeout'), 'warn')
})

t.test(
  'the hub publishing straight into its broker: delivered live, queued for an offline session, retained',
  async (t) => {
    const dbPath = join(await tempDir(t), 'broker')
    let broker = await startEmbeddedBroker(t, { dbPath })
    const away = await mqtt.connectAsync(broker.url, { clientId: 'away', clean: false, reconnectPeriod: 0 })
    await away.subscribeAsync('out/#', { qos: 1 })
    await away.endAsync()
    const live = await mqtt.connectAsync(broker.url, { reconnectPeriod: 0 })
    await live.subscribeAsync('out/#', { qos: 1 })

    const publish = directPublish(broker.aedes, broker.heard)
    const got = nextMessage(live, 'out/1')
    await publish('out/1', 'answer', { qos: 1, retain: false })
    t.equal((await got).payload, 'answer', 'a live subscriber has it')
    await publish('svc/hub/state', '{"state":"online"}', { qos: 1, retain: true })
    await live.endAsync()

    // Once the publish resolved, the message is in the offline session's queue and the retained
    // message in the store: both are there after a restart.
    await broker.close()
    broker = await startEmbeddedBroker(t, { dbPath })
    // Listening before the connection: the queue is sent right after CONNACK.
    const back = mqtt.connect(broker.url, { clientId: 'away', clean: false, reconnectPeriod: 0 })
    t.equal((await nextMessage(back, 'out/1')).payload, 'answer', 'queued for the session that was away')
    await back.endAsync()
    t.same(await retainedOn(broker.url, 'svc/hub/state'), { payload: '{"state":"online"}', retain: true })
  },
)

t.test(
  'a topic the broker cannot take, published straight in: a clear error, and the broker goes on',
  async (t) => {
    const broker = await startEmbeddedBroker(t)
    const tool = createMqttPublish(directPublish(broker.aedes, broker.heard))
    const deep = Array.from({ length: 101 }, (_, i) => `l${i}`).join('/')
    const signal = new AbortController().signal
    const r = await tool.run(
      { topic: deep, payload: 'x' },
      { runId: 'r', sop: 's', step: 1, call: 0, idempotencyKey: 'k', signal },
    )
    t.equal(r.ok, false)
    t.match(
      !r.ok && r.error,
      /^mqtt_publish l0\/l1\/.*: topic has too many levels$/,
      'names the call and the topic',
    )

    const live = await mqtt.connectAsync(broker.url, { reconnectPeriod: 0 })
    await live.subscribeAsync('out/#', { qos: 1 })
    const got = nextMessage(live, 'out/2')
    t.same(
      await tool.run(
        { topic: 'out/2', payload: 'after' },
        { runId: 'r', sop: 's', step: 1, call: 1, idempotencyKey: 'k2', signal },
      ),
      { ok: true, output: { topic: 'out/2', bytes: 5 } },
    )
    t.equal((await got).payload, 'after', 'the next publish is delivered')
    await live.endAsync()
  },
)
