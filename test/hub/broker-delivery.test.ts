// QoS 1 delivery to a persistent session under concurrent publishers: nothing may be lost.
// Aedes' own duplicate check dropped about 9% of these (hub/broker/forward-once.ts says why).
import t from 'tap'
import mqtt from 'mqtt'
import type { AedesPublishPacket, Client } from 'aedes'
import { forwardOnce } from '../../hub/broker/forward-once.ts'
import { waitForCount } from '../helpers/wait.ts'
import { startEmbeddedBroker } from './embedded-broker.ts'

const PUBLISHERS = 8
const EACH = 2000

function collect(client: mqtt.MqttClient, seen: Map<string, number>): void {
  client.on('message', (_topic, payload) => {
    const k = payload.toString()
    seen.set(k, (seen.get(k) ?? 0) + 1)
  })
}

function publishAll(url: string, round: string): Promise<void> {
  return (async () => {
    const pubs = await Promise.all(
      Array.from({ length: PUBLISHERS }, () => mqtt.connectAsync(url, { reconnectPeriod: 0 })),
    )
    await Promise.all(
      pubs.map((c, i) =>
        Promise.all(
          Array.from({ length: EACH }, (_, j) =>
            c.publishAsync(`boards/b${i}/s`, `${round}:${i}:${j}`, { qos: 1 }),
          ),
        ),
      ),
    )
    await Promise.all(pubs.map((c) => c.endAsync()))
  })()
}

t.test('concurrent QoS 1 publishers: a persistent subscriber receives every message', async (t) => {
  const broker = await startEmbeddedBroker(t)
  const sub = await mqtt.connectAsync(broker.url, { clientId: 'router', clean: false, reconnectPeriod: 0 })
  await sub.subscribeAsync('boards/#', { qos: 1 })
  const seen = new Map<string, number>()
  collect(sub, seen)
  await publishAll(broker.url, 'live')
  // Gives up only after 5 s without a new message (not a deadline); the assertion says how many.
  await waitForCount(() => seen.size, PUBLISHERS * EACH, { idleMs: 5_000 })
  t.equal(seen.size, PUBLISHERS * EACH, 'every message arrived')
  t.equal([...seen.values()].filter((n) => n > 1).length, 0, 'and none twice while connected')
  await sub.endAsync()
})

t.test(
  'a persistent session that reconnects while publishers run gets the queue and the live traffic',
  async (t) => {
    const broker = await startEmbeddedBroker(t)
    const first = await mqtt.connectAsync(broker.url, {
      clientId: 'router',
      clean: false,
      reconnectPeriod: 0,
    })
    await first.subscribeAsync('boards/#', { qos: 1 })
    await first.endAsync()
    await publishAll(broker.url, 'queued')

    const seen = new Map<string, number>()
    const back = mqtt.connect(broker.url, { clientId: 'router', clean: false, reconnectPeriod: 0 })
    collect(back, seen)
    await Promise.all([publishAll(broker.url, 'live'), new Promise((r) => back.once('connect', r))])
    await waitForCount(() => seen.size, 2 * PUBLISHERS * EACH, { idleMs: 5_000 })
    t.equal(seen.size, 2 * PUBLISHERS * EACH, 'every queued and every live message arrived')
    await back.endAsync()
  },
)

t.test('forwardOnce: exact duplicates dropped, out-of-order deliveries kept', async (t) => {
  const once = forwardOnce(3)
  const a = {} as Client
  const b = {} as Client
  const p = (counter: number, brokerId: string | null = 'B'): AedesPublishPacket =>
    ({
      brokerId: brokerId ?? undefined,
      brokerCounter: counter,
      topic: 't',
      payload: '',
      qos: 1,
      cmd: 'publish',
      dup: false,
      retain: false,
    }) as unknown as AedesPublishPacket
  t.ok(once.authorizeForward(a, p(5)), 'first delivery')
  t.ok(once.authorizeForward(a, p(3)), 'an older counter arriving late is still forwarded')
  t.equal(once.authorizeForward(a, p(5)), null, 'the same packet again is a duplicate')
  t.ok(once.authorizeForward(a, p(5, 'other')), 'same counter from another broker is another packet')
  t.ok(once.authorizeForward(b, p(5)), 'another connection has its own record')
  t.ok(once.authorizeForward(a, p(9)), 'window of 3: 5 is forgotten now')
  t.ok(once.authorizeForward(a, p(5)), 'so it passes again (a replay this late is a real redelivery)')
  t.ok(once.authorizeForward(a, p(1, null)), 'a packet with no broker id is never held back')
  t.ok(once.authorizeForward(a, p(1, null)), 'twice')

  // A connection to this very broker (id B): its own deliveries are remembered by counter alone.
  const own = { broker: { id: 'B' } } as unknown as Client
  t.ok(once.authorizeForward(own, p(5)), 'own broker: first delivery')
  t.equal(once.authorizeForward(own, p(5)), null, 'own broker: the same packet again is a duplicate')
  t.ok(
    once.authorizeForward(own, p(5, 'other')),
    "the same counter from an earlier broker's store is another",
  )
  t.equal(once.authorizeForward(own, p(5, 'other')), null, 'and its copy a duplicate')
  t.equal(once.claimReplay(own, p(5)), false, 'a queued copy of what went out live is not replayed')
  t.equal(once.claimReplay(own, p(6)), true, 'one not sent yet is, from the queue')
  t.ok(once.authorizeForward(own, p(6)), 'the queued copy goes out')
  t.equal(once.authorizeForward(own, p(6)), null, 'the live copy after it is dropped')

  const client = { duplicates: { B: 7 } } as unknown as Client & { duplicates: Record<string, number> }
  let ok: boolean | undefined
  once.preConnect(client, {} as never, (_e, success) => (ok = success))
  t.equal(ok, true, 'connections are admitted')
  client.duplicates.B = 100
  t.equal(client.duplicates.B, 0, "Aedes' high-water mark never holds anything back")
})
