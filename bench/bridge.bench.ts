// Bridge throughput: events/s from a (mock) serial port through the bridge to an MQTT
// subscriber at QoS1, none lost, beside raw Aedes publish→subscribe (an mqtt.js client
// publishing the same payloads at QoS1) measured in the same process. Aim: ≥ 20,000 events/s
// and ≥ 0.5× raw.
import mqtt, { type MqttClient } from 'mqtt'
import { createBridge } from '../bridge/index.ts'
import { createSimulatedBoard, vendingCoin } from '../boards/simulator/board.ts'
import { createDeviceBinding } from '../boards/simulator/device-binding.ts'
import { startBareBroker } from './aedes-broker.ts'

const N = Number(process.env.BENCH_N ?? 20_000)
const ROUNDS = 3

function counter(sub: MqttClient, topic: string) {
  let got = 0
  let want = 0
  let done: (() => void) | undefined
  sub.on('message', (t) => {
    if (t !== topic) return
    got++
    if (got === want && done) done()
  })
  return {
    expect(n: number): Promise<void> {
      got = 0
      want = n
      return new Promise((r) => (done = r))
    },
    count: () => got,
  }
}

async function main(): Promise<void> {
  const b = await startBareBroker()
  const pub = await mqtt.connectAsync(b.url, { reconnectPeriod: 0 })
  const sub = await mqtt.connectAsync(b.url, { reconnectPeriod: 0 })
  await sub.subscribeAsync('bench/raw', { qos: 1 })
  await sub.subscribeAsync('boards/vend1/coin', { qos: 1 })
  const raw = counter(sub, 'bench/raw')
  const bridged = counter(sub, 'boards/vend1/coin')
  const payloads = Array.from({ length: N }, (_, i) => vendingCoin(i))

  const binding = createDeviceBinding()
  const board = createSimulatedBoard('vend1', { rate: 0 })
  binding.attach('/bench/vend1', board)
  const bridge = createBridge({
    boards: [{ name: 'vend1', port: '/bench/vend1', heartbeatMs: 0 }],
    publish: async (topic, payload, opts) => {
      await pub.publishAsync(topic, payload, opts)
    },
    binding,
  })
  await bridge.start()
  while (!board.stats().connected) await new Promise((r) => setTimeout(r, 5))

  async function runRaw(): Promise<number> {
    const arrived = raw.expect(N)
    const t0 = performance.now()
    const acks: Promise<unknown>[] = []
    for (const p of payloads) acks.push(pub.publishAsync('bench/raw', p, { qos: 1 }))
    await Promise.all(acks)
    await arrived
    return N / ((performance.now() - t0) / 1000)
  }
  async function runBridge(): Promise<number> {
    const arrived = bridged.expect(N)
    const before = bridge.stats().boards.vend1!.published
    const t0 = performance.now()
    // The board prints in bursts, as a UART delivers: 500 lines per chunk.
    for (let i = 0; i < N; i += 500) {
      board.emitEvents(Math.min(500, N - i))
      await new Promise((r) => setImmediate(r))
    }
    await arrived
    const rate = N / ((performance.now() - t0) / 1000)
    while (bridge.stats().boards.vend1!.published - before < N) await new Promise((r) => setTimeout(r, 1))
    return rate
  }

  if (process.env.BENCH_DEBUG)
    setInterval(
      () => console.error('raw', raw.count(), 'bridged', bridged.count(), JSON.stringify(bridge.stats())),
      2000,
    ).unref()
  // The bridge's own ceiling: the same path with a publish that resolves at once.
  async function runBridgeAlone(): Promise<number> {
    const b2 = createDeviceBinding()
    const board2 = createSimulatedBoard('solo', { rate: 0 })
    b2.attach('/bench/solo', board2)
    let n = 0
    let done!: () => void
    const all = new Promise<void>((r) => (done = r))
    const solo = createBridge({
      boards: [{ name: 'solo', port: '/bench/solo', heartbeatMs: 0 }],
      publish: async (topic) => {
        if (topic === 'boards/solo/coin' && ++n === N) done()
      },
      binding: b2,
    })
    await solo.start()
    while (!board2.stats().connected) await new Promise((r) => setTimeout(r, 5))
    const t0 = performance.now()
    for (let i = 0; i < N; i += 500) {
      board2.emitEvents(Math.min(500, N - i))
      await new Promise((r) => setImmediate(r))
    }
    await all
    const rate = N / ((performance.now() - t0) / 1000)
    await solo.close()
    b2.detach('/bench/solo')
    return rate
  }

  // Warm-up (JIT, socket buffers), not reported.
  await runRaw()
  await runBridge()
  const raws: number[] = []
  const bridges: number[] = []
  for (let r = 0; r < ROUNDS; r++) {
    raws.push(await runRaw())
    bridges.push(await runBridge())
  }
  const alone = await runBridgeAlone()
  const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
  const s = bridge.stats()
  const lost = (ROUNDS + 1) * N - s.boards.vend1!.published
  const rawRate = median(raws)
  const bridgeRate = median(bridges)
  console.log(`bridge: ${N} events × ${ROUNDS} rounds, QoS1, mock port → bridge → Aedes → mqtt.js subscriber`)
  console.log(
    `  raw Aedes publish→subscribe (baseline): ${Math.round(rawRate).toLocaleString('en')} msg/s   (rounds: ${raws.map((x) => Math.round(x)).join(', ')})`,
  )
  console.log(
    `  bridge events → subscriber:             ${Math.round(bridgeRate).toLocaleString('en')} events/s (rounds: ${bridges.map((x) => Math.round(x)).join(', ')})`,
  )
  console.log(`  bridge alone (publish resolves at once): ${Math.round(alone).toLocaleString('en')} events/s`)
  console.log(
    `  ratio bridge/raw: ${(bridgeRate / rawRate).toFixed(2)}×   lost: ${lost}   garbage: ${s.boards.vend1!.garbage}   dropped: ${s.queue.dropped}`,
  )
  console.log(
    `  aim: ≥ 20,000 events/s and ≥ 0.5× raw → ${bridgeRate >= 20_000 && bridgeRate >= 0.5 * rawRate ? 'met' : 'NOT met'}`,
  )
  await bridge.close()
  await pub.endAsync()
  await sub.endAsync()
  await b.stop()
  if (lost !== 0) process.exitCode = 1
}

await main()
