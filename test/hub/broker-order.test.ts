// Order on the embedded broker (MQTT 5 §4.6): messages one publisher sends on one topic reach
// every subscriber in the order sent, at QoS 1 and 2, for clean and persistent sessions alike.
// Publishers pipeline (up to WINDOW publishes sent ahead of their acknowledgements), so the broker
// has many packets of one client in flight at once: the case where its asynchronous persistence used
// to let a later packet overtake an earlier one.
import t from 'tap'
import mqtt from 'mqtt'
import { waitForCount } from '../helpers/wait.ts'
import { inOrder } from '../../hub/broker/order.ts'
import { startEmbeddedBroker } from './embedded-broker.ts'

const PUBLISHERS = 4
const EACH = 2500
/** Publishes a client keeps unacknowledged: under Aedes' inbound QoS 2 cap (maxInflightInbound,
 *  1000, past which it drops the client), and far more than one socket read's worth of packets. */
const WINDOW = 500

interface Subscriber {
  name: string
  client: mqtt.MqttClient
  /** publisher index → the sequence numbers received, in arrival order */
  got: number[][]
}

async function subscriber(url: string, name: string, clean: boolean, qos: 1 | 2): Promise<Subscriber> {
  const client = await mqtt.connectAsync(url, { clientId: name, clean, reconnectPeriod: 0 })
  await client.subscribeAsync('order/#', { qos })
  const got: number[][] = Array.from({ length: PUBLISHERS }, () => [])
  client.on('message', (_topic, payload) => {
    const [p, n] = payload.toString().split(':').map(Number)
    got[p as number]?.push(n as number)
  })
  return { name, client, got }
}

/** The first place where `seq` is not 0, 1, 2, …, described, or null when it is exactly that. */
function firstDisorder(seq: number[]): string | null {
  for (let i = 0; i < seq.length; i++)
    if (seq[i] !== i) return `at position ${i}: ${seq.slice(Math.max(0, i - 2), i + 3).join(',')}`
  return null
}

/** Publishes 0..EACH-1 on `topic` in order, keeping up to WINDOW of them unacknowledged. */
async function publishSequence(c: mqtt.MqttClient, topic: string, p: number, qos: 1 | 2): Promise<void> {
  let next = 0
  const lane = async (): Promise<void> => {
    while (next < EACH) {
      const j = next++
      await c.publishAsync(topic, `${p}:${j}`, { qos })
    }
  }
  await Promise.all(Array.from({ length: WINDOW }, lane))
}

function swaps(seq: number[]): number {
  let n = 0
  for (let i = 1; i < seq.length; i++) if ((seq[i] as number) < (seq[i - 1] as number)) n++
  return n
}

for (const qos of [1, 2] as const) {
  t.test(
    `QoS ${qos}: ${PUBLISHERS} publishers × ${EACH}, every subscriber sees each sequence in order`,
    async (t) => {
      const broker = await startEmbeddedBroker(t)
      const subs = [
        await subscriber(broker.url, `clean-${qos}`, true, qos),
        await subscriber(broker.url, `persistent-${qos}`, false, qos),
      ]
      const pubs = await Promise.all(
        Array.from({ length: PUBLISHERS }, (_, i) =>
          mqtt.connectAsync(broker.url, { clientId: `pub-${qos}-${i}`, reconnectPeriod: 0 }),
        ),
      )
      await Promise.all(pubs.map((c, i) => publishSequence(c, `order/p${i}`, i, qos)))
      const total = (s: Subscriber): number => s.got.reduce((n, g) => n + g.length, 0)
      for (const s of subs) {
        // Gives up only after 5 s without a new message (not a deadline); the assertions say how many.
        await waitForCount(() => total(s), PUBLISHERS * EACH, { idleMs: 5_000 })
        for (let p = 0; p < PUBLISHERS; p++) {
          const seq = s.got[p] as number[]
          t.equal(seq.length, EACH, `${s.name}: publisher ${p} complete`)
          t.equal(
            firstDisorder(seq),
            null,
            `${s.name}: publisher ${p} in order (${swaps(seq)} backward steps)`,
          )
        }
      }
      await Promise.all([...pubs, ...subs.map((s) => s.client)].map((c) => c.endAsync()))
    },
  )
}

t.test('inOrder: answers in call order per key, rejections included; other keys do not wait', async (t) => {
  const settle = inOrder()
  const order: string[] = []
  let releaseA: (v: string) => void = () => {}
  const a = settle('t:x', new Promise<string>((r) => (releaseA = r))).then((v) => order.push(v))
  const b = settle('t:x', Promise.resolve('b')).then((v) => order.push(v))
  const c = settle('t:x', Promise.reject(new Error('c'))).catch((e: Error) => order.push(e.message))
  await settle('t:y', Promise.resolve('y')).then((v) => order.push(v))
  t.same(order, ['y'], 'a later call on another topic is answered at once; b and c wait for a')
  releaseA('a')
  await Promise.all([a, b, c])
  t.same(order, ['y', 'a', 'b', 'c'])
})
