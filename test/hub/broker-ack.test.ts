// What a QoS 1 acknowledgement promises on the embedded broker (hub/DESIGN.md, "What survives a
// crash"): a message the broker has PUBACKed is stored, and a message a subscriber has not
// PUBACKed stays queued for it. The crash is played deterministically: a persistence write held
// forever is the write a SIGKILL cut off; the broker is then closed and started again on the same
// database, as the hub does after a kill.
import t from 'tap'
import mqtt, { type MqttClient } from 'mqtt'
import type { AedesPublishPacket, Client } from 'aedes'
import { join } from 'node:path'
import type { EmbeddedBroker } from '../../hub/broker/broker.ts'
import { freePort } from '../helpers/ports.ts'
import { tempDir } from '../helpers/tmp.ts'
import { waitFor } from '../helpers/wait.ts'
import { skipPacketIds } from '../../hub/broker/packet-ids.ts'
import { startEmbeddedBroker } from './embedded-broker.ts'

type Persistence = Record<string, unknown>

type Call = (...args: unknown[]) => unknown

/** Replaces one persistence call of a running broker (`make` gets the original), keeping every other. */
function replaceCall(broker: EmbeddedBroker, name: string, make: (original: Call) => Call): void {
  const aedes = broker.aedes as unknown as { persistence: Persistence }
  const real = aedes.persistence
  const original = (real[name] as Call).bind(real)
  const fn = make(original)
  aedes.persistence = new Proxy(real, {
    get: (target, key, receiver) => (key === name ? fn : Reflect.get(target, key, receiver)),
  })
}

/** The packets queued for `clientId`, read from the broker's persistence. */
async function queued(broker: EmbeddedBroker, clientId: string): Promise<AedesPublishPacket[]> {
  const p = (
    broker.aedes as unknown as { persistence: { outgoingStream(c: { id: string }): AsyncIterable<unknown> } }
  ).persistence
  const out: AedesPublishPacket[] = []
  for await (const packet of p.outgoingStream({ id: clientId })) out.push(packet as AedesPublishPacket)
  return out
}

/** A subscriber that withholds its PUBACKs until `ack(messageId)`: one that took a message and
 *  died before it was done with it. */
function withheldAcks(client: MqttClient): { ack(messageId: number): void } {
  const held = new Map<number, () => void>()
  const c = client as unknown as {
    _sendPacket: (packet: { cmd?: string; messageId?: number }, cb?: () => void) => void
  }
  const send = c._sendPacket.bind(client)
  c._sendPacket = (packet, cb) => {
    if (packet.cmd !== 'puback' || packet.messageId === undefined) return send(packet, cb)
    held.set(packet.messageId, () => send(packet))
    cb?.()
  }
  return {
    ack(messageId) {
      held.get(messageId)?.()
      held.delete(messageId)
    },
  }
}

t.test('a QoS 1 publish is acknowledged only once it is stored for the offline subscriber', async (t) => {
  const dbPath = join(await tempDir(t), 'broker')
  const port = await freePort()
  const first = await startEmbeddedBroker(t, { dbPath, port })
  const keeper = await mqtt.connectAsync(first.url, { clientId: 'keeper', clean: false, reconnectPeriod: 0 })
  await keeper.subscribeAsync('out/#', { qos: 1 })
  await keeper.endAsync()

  // The write that queues the message for the offline subscriber never finishes: the kill came first.
  let queuing = false
  replaceCall(first, 'outgoingEnqueueCombi', () => () => {
    queuing = true
    return new Promise(() => undefined)
  })
  const pub = await mqtt.connectAsync(first.url, { clientId: 'pub', clean: false, reconnectPeriod: 50 })
  t.teardown(() => pub.endAsync(true))
  let acked = false
  pub.publish('out/1', 'one', { qos: 1 }, (err) => {
    if (!err) acked = true
  })
  await waitFor(() => queuing, 'the broker to queue the message')
  const closed = new Promise<void>((r) => pub.once('close', () => r()))
  await first.close()
  // The PUBACK, had it been sent before the write, arrived ahead of the connection's end.
  await closed
  t.notOk(acked, 'no PUBACK for a message whose write a crash cut off')

  // Started again: the publisher, never acknowledged, sends it again and it reaches the subscriber.
  const second = await startEmbeddedBroker(t, { dbPath, port })
  await waitFor(() => acked, 'the publisher to send the message again and get its PUBACK')
  const back = await mqtt.connectAsync(second.url, { clientId: 'keeper', clean: false, reconnectPeriod: 0 })
  t.teardown(() => back.endAsync(true))
  const got: string[] = []
  back.on('message', (topic) => got.push(topic))
  await waitFor(() => got.includes('out/1'), 'the subscriber to get out/1')
  t.same(got, ['out/1'], 'the subscriber got the message once')
})

t.test('a PUBACK for a replayed message never clears a newer one with the same packet id', async (t) => {
  const broker = await startEmbeddedBroker(t)
  const pub = await mqtt.connectAsync(broker.url, { reconnectPeriod: 0 })
  t.teardown(() => pub.endAsync(true))

  // A takes packet id m and is not acknowledged: it stays queued with m for the next connection.
  const one = await mqtt.connectAsync(broker.url, { clientId: 'keeper', clean: false, reconnectPeriod: 0 })
  withheldAcks(one)
  await one.subscribeAsync('out/#', { qos: 1 })
  let a: { messageId?: number } | undefined
  one.on('message', (topic, _p, packet) => {
    if (topic === 'out/a') a = packet
  })
  await pub.publishAsync('out/a', 'a', { qos: 1 })
  const m = (await waitFor(() => a?.messageId, 'out/a to arrive')) as number
  await one.endAsync(true)

  // The next connection numbers its new deliveries from m (Aedes starts each connection at a
  // random id: here the chance that it lands on a stored one is made certain).
  const onClient = (c: Client): void => {
    if (c.id === 'keeper') (c as unknown as { _nextId: number })._nextId = m
  }
  broker.aedes.on('client', onClient)
  const two = mqtt.connect(broker.url, { clientId: 'keeper', clean: false, reconnectPeriod: 0 })
  t.teardown(() => two.endAsync(true))
  const acks = withheldAcks(two)
  const seen = new Map<string, number>()
  two.on('message', (topic, _p, packet) => seen.set(topic, packet.messageId as number))
  await waitFor(() => seen.has('out/a'), 'out/a to be sent again')
  broker.aedes.off('client', onClient)
  t.equal(seen.get('out/a'), m, 'out/a is sent again with its own packet id (MQTT 3.1.1 §4.4)')
  await pub.publishAsync('out/b', 'b', { qos: 1 })
  await waitFor(() => seen.has('out/b'), 'out/b to arrive')
  t.not(seen.get('out/b'), m, 'out/b gets a packet id not in use (MQTT 3.1.1 §2.3.1)')

  // The subscriber acknowledges out/a only, then dies: out/b must stay queued.
  const cleared = new Promise((r) => broker.aedes.once('ack', r))
  acks.ack(m)
  await cleared
  await two.endAsync(true)
  await waitFor(() => broker.aedes.connectedClients === 1, 'the broker to see the subscriber go')
  t.same(
    (await queued(broker, 'keeper')).map((p) => p.topic),
    ['out/b'],
    'out/a is cleared by its PUBACK and out/b, never acknowledged, is still queued',
  )
})

t.test(
  'a message sent live while its session connects stays queued until the subscriber acknowledges it',
  async (t) => {
    const broker = await startEmbeddedBroker(t)
    const keeper = await mqtt.connectAsync(broker.url, {
      clientId: 'keeper',
      clean: false,
      reconnectPeriod: 0,
    })
    await keeper.subscribeAsync('out/#', { qos: 1 })
    await keeper.endAsync()
    const pub = await mqtt.connectAsync(broker.url, { reconnectPeriod: 0 })
    t.teardown(() => pub.endAsync(true))

    // The session's connection is held between restoring its subscriptions and sending its queue
    // (the will step), the moment a message published now is both queued and sent live.
    let release: () => void = () => undefined
    const held = new Promise<void>((r) => (release = r))
    let holding = false
    replaceCall(broker, 'delWill', (original) => async (...args) => {
      if (!holding) {
        holding = true
        await held
      }
      return original(...args)
    })
    const ready = new Promise<void>((r) =>
      broker.aedes.on('clientReady', (c: Client) => {
        if (c.id === 'keeper') r()
      }),
    )
    const two = mqtt.connect(broker.url, { clientId: 'keeper', clean: false, reconnectPeriod: 0 })
    t.teardown(() => two.endAsync(true))
    withheldAcks(two)
    await waitFor(() => holding, 'the session to be connecting')
    await pub.publishAsync('out/x', 'x', { qos: 1 })
    release()
    // Aedes reports the client ready once its queue has been sent.
    await ready
    await two.endAsync(true)
    await waitFor(() => broker.aedes.connectedClients === 1, 'the broker to see the subscriber go')
    t.same(
      (await queued(broker, 'keeper')).map((p) => p.topic),
      ['out/x'],
      'out/x, sent twice (live and from the queue) and never acknowledged, is still queued',
    )
  },
)

t.test('the DUP flag of a publish is not passed on to subscribers (MQTT 3.1.1 §3.3.1.1)', async (t) => {
  const broker = await startEmbeddedBroker(t)
  const sub = await mqtt.connectAsync(broker.url, { clientId: 'dup-sub', clean: false, reconnectPeriod: 0 })
  t.teardown(() => sub.endAsync(true))
  await sub.subscribeAsync('out/#', { qos: 1 })
  const dups: boolean[] = []
  sub.on('message', (_topic, _p, packet) => dups.push(packet.dup))
  const pub = await mqtt.connectAsync(broker.url, { reconnectPeriod: 0 })
  t.teardown(() => pub.endAsync(true))
  // A publisher sends again what it had no PUBACK for, with DUP set: for the subscriber it is a
  // first delivery.
  await pub.publishAsync('out/1', 'one', { qos: 1, dup: true })
  await waitFor(() => dups.length === 1, 'the message to arrive')
  t.same(dups, [false], 'the subscriber gets it without DUP')
})

t.test('skipPacketIds: the counter steps over taken ids, across the wrap from 65535 to 1', async (t) => {
  const client = { _nextId: 65534 } as unknown as Client
  skipPacketIds(client, new Set([65535, 1, 2]))
  const c = client as unknown as { _nextId: number }
  // Aedes' own use (lib/qos-packet.js): read the id, then step the counter, wrapping after 65535.
  const take = (): number => {
    const id = c._nextId
    if (c._nextId >= 65535) c._nextId = 1
    else c._nextId++
    return id
  }
  t.same([take(), take(), take()], [65534, 3, 4], '65535, 1 and 2 are never handed out')
  c._nextId = 2
  t.equal(take(), 3, 'a counter set onto a taken id moves past it')
})
