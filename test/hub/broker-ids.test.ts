// Packet ids on the embedded broker (hub/broker/unique-ids.ts): a persistent session that comes
// back gets its unacknowledged messages again under their own ids, and the messages delivered
// beside them get other ids, so acknowledging one never clears another from the session. Aedes
// numbers new deliveries from a counter that ignores the replayed ids; the test points that
// counter at the replayed ids on purpose, which is what a restart does by chance.
import t from 'tap'
import mqtt from 'mqtt'
import { startEmbeddedBroker } from './embedded-broker.ts'
import { waitFor } from '../helpers/wait.ts'

const ID = 'ids-subscriber'

interface Got {
  topic: string
  messageId: number
}

/**
 * A persistent session whose PUBACKs are held back until `ack(topics)` sends those of the given
 * topics (the others stay unacknowledged).
 */
async function subscriber(url: string) {
  const c = await mqtt.connectAsync(url, { clientId: ID, clean: false, reconnectPeriod: 0 })
  const got: Got[] = []
  const held: { topic: string; packet: object }[] = []
  const byId = new Map<number, string>()
  const internals = c as unknown as {
    _sendPacket(p: { cmd?: string; messageId?: number }, cb?: () => void, ...r: unknown[]): void
  }
  const send = internals._sendPacket
  internals._sendPacket = function (p, cb, ...r) {
    if (p.cmd !== 'puback') return send.call(this, p, cb, ...r)
    held.push({ topic: byId.get(p.messageId as number) ?? '', packet: p })
    cb?.()
  }
  c.on('message', (topic, _payload, packet) => {
    byId.set(packet.messageId as number, topic)
    got.push({ topic, messageId: packet.messageId as number })
  })
  const ack = (which: (topic: string) => boolean): void => {
    for (const h of held.filter((x) => which(x.topic))) send.call(c, h.packet)
  }
  return { c, got, ack }
}

t.test(
  'a session back with unacknowledged messages: no id held twice, none cleared by another',
  async (t) => {
    const broker = await startEmbeddedBroker(t)
    const pub = await mqtt.connectAsync(broker.url, { reconnectPeriod: 0 })
    t.teardown(() => pub.endAsync(true))
    const first = await subscriber(broker.url)
    await first.c.subscribeAsync('u/#', { qos: 1 })
    for (const n of [1, 2, 3]) await pub.publishAsync(`u/a${n}`, 'a', { qos: 1 })
    await waitFor(() => first.got.length === 3, 'the first three delivered')
    await first.c.endAsync(true) // unacknowledged: the session keeps them, with their ids
    const replayedIds = first.got.map((g) => g.messageId)

    // The next connection of the session numbers its new deliveries from the first replayed id.
    const point = (client: { id: string; _nextId: number }): void => {
      if (client.id === ID) client._nextId = replayedIds[0] as number
    }
    broker.aedes.on('client', point as never)
    const second = await subscriber(broker.url)
    broker.aedes.off('client', point as never)
    await waitFor(() => second.got.length >= 3, 'the three sent again')
    for (const n of [1, 2, 3]) await pub.publishAsync(`u/b${n}`, 'b', { qos: 1 })
    await waitFor(() => second.got.length === 6, 'three more delivered')
    t.same(
      second.got.filter((g) => g.topic.startsWith('u/a')).map((g) => g.messageId),
      replayedIds,
      'sent again under their own ids',
    )
    const ids = second.got.map((g) => g.messageId)
    t.equal(new Set(ids).size, 6, `six unacknowledged messages, six ids (${ids.join(', ')})`)
    // Now the a's are acknowledged, the b's not: the b's must still be in the session.
    second.ack((topic) => topic.startsWith('u/a'))
    await new Promise((r) => setTimeout(r, 200))
    await second.c.endAsync(true)

    const third = await subscriber(broker.url)
    t.teardown(() => third.c.endAsync(true))
    await waitFor(() => third.got.length >= 3, 'the unacknowledged b messages sent again')
    await new Promise((r) => setTimeout(r, 200))
    t.same(third.got.map((g) => g.topic).sort(), ['u/b1', 'u/b2', 'u/b3'], 'the b messages, and only them')
  },
)
