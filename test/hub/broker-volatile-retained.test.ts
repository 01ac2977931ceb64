// The embedded broker keeps the hub's own summaries retained in memory, not in its LevelDB
// (hub/broker/volatile-retained.ts): subscribers get them as any retained message, the store
// never holds them, and a copy an older hub stored is neither served nor kept.
import t from 'tap'
import { join } from 'node:path'
import type { Readable } from 'node:stream'
import mqtt from 'mqtt'
import type { EmbeddedBroker } from '../../hub/broker/broker.ts'
import { tempDir } from '../helpers/tmp.ts'
import { startEmbeddedBroker, storedRetained } from './embedded-broker.ts'

const STATE = 'svc/hub/state'

/** What a new client subscribing to `topic` gets first: its retained message. */
async function retainedTo(url: string, topic: string): Promise<string> {
  const c = await mqtt.connectAsync(url, { reconnectPeriod: 0 })
  const got = new Promise<string>((resolve) =>
    c.on('message', (tp, payload, packet) => {
      if (tp === topic && packet.retain) resolve(payload.toString())
    }),
  )
  await c.subscribeAsync(topic, { qos: 1 })
  const payload = await got
  await c.endAsync()
  return payload
}

/** The whole stream of retained messages a SUBSCRIBE to `#` reads, to its end. */
async function retainedAll(broker: EmbeddedBroker): Promise<Map<string, string>> {
  const persistence = (
    broker.aedes as unknown as { persistence: { createRetainedStreamCombi(p: string[]): Readable } }
  ).persistence
  const got = new Map<string, string>()
  for await (const p of persistence.createRetainedStreamCombi(['#']) as AsyncIterable<{
    topic: string
    payload: Buffer
  }>)
    got.set(p.topic, p.payload.toString())
  return got
}

t.test('a volatile topic is retained for subscribers but never stored', async (t) => {
  const dbPath = join(await tempDir(t), 'broker')
  const broker = await startEmbeddedBroker(t, { dbPath, volatileRetained: [STATE] })
  const pub = await mqtt.connectAsync(broker.url, { reconnectPeriod: 0, ...broker.hubLogin })
  await pub.publishAsync(STATE, '{"state":"online","n":1}', { qos: 1, retain: true })
  await pub.publishAsync(STATE, '{"state":"online","n":2}', { qos: 1, retain: true })
  await pub.publishAsync('boards/vend1/availability', 'online', { qos: 1, retain: true })
  await pub.endAsync()

  t.equal(await retainedTo(broker.url, STATE), '{"state":"online","n":2}', 'a subscriber gets the latest')
  t.same(
    [...(await retainedAll(broker))].sort(),
    [
      ['boards/vend1/availability', 'online'],
      [STATE, '{"state":"online","n":2}'],
    ],
    'a wildcard gets it beside the stored ones',
  )

  // An empty retained payload clears it, as MQTT says (MQTT-3.3.1-10).
  const pub2 = await mqtt.connectAsync(broker.url, { reconnectPeriod: 0, ...broker.hubLogin })
  await pub2.publishAsync(STATE, '', { qos: 1, retain: true })
  await pub2.endAsync()
  t.notOk((await retainedAll(broker)).has(STATE), 'cleared')

  await broker.close()
  t.same(await storedRetained(dbPath), ['boards/vend1/availability'], 'only the availability was stored')
})

t.test("an older hub's stored copy is not served, and goes at the first retain", async (t) => {
  const dbPath = join(await tempDir(t), 'broker')
  const old = await startEmbeddedBroker(t, { dbPath })
  const pub = await mqtt.connectAsync(old.url, { reconnectPeriod: 0, ...old.hubLogin })
  await pub.publishAsync(STATE, '{"state":"offline"}', { qos: 1, retain: true })
  await pub.endAsync()
  await old.close()
  t.same(await storedRetained(dbPath), [STATE], 'the older broker stored it')

  const broker = await startEmbeddedBroker(t, { dbPath, volatileRetained: [STATE] })
  t.notOk((await retainedAll(broker)).has(STATE), 'the stale copy is not served')
  const pub2 = await mqtt.connectAsync(broker.url, { reconnectPeriod: 0, ...broker.hubLogin })
  await pub2.publishAsync(STATE, '{"state":"online"}', { qos: 1, retain: true })
  await pub2.endAsync()
  t.equal(await retainedTo(broker.url, STATE), '{"state":"online"}')
  await broker.close()
  t.same(await storedRetained(dbPath), [], 'and the store no longer holds it')
})
