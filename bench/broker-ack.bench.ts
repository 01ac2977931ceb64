// The embedded broker's QoS 1 PUBACK sent once the message is stored (hub/broker/ack-after-store.ts,
// with the packet-id reservation of hub/broker/packet-ids.ts and the queue read of
// forward-once.ts `replayOnce`) against the same Aedes + LevelDB
// persistence acknowledging first, as Aedes does (the baseline), in one process. Rounds
// alternate, so machine load falls on both alike; medians of 3. Each round: a persistent
// subscriber online and one offline (so every message is written to two queues), then
//   - latency: 1,000 QoS 1 publishes one at a time, publish → PUBACK p50/p99;
//   - throughput: 4 publishers × 2,500 QoS 1 messages, up to 500 unacknowledged each, messages/s
//     until every one is acknowledged and delivered to the online subscriber.
import { createServer, type AddressInfo, type Server } from 'node:net'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { Aedes } from 'aedes'
import { Level } from 'level'
import mqtt from 'mqtt'
// @ts-expect-error aedes-persistence-level ships no types: (db: Level) => persistence
import aedesPersistenceLevel from 'aedes-persistence-level'
import { ackAfterStore } from '../hub/broker/ack-after-store.ts'
import { forwardOnce, replayOnce } from '../hub/broker/forward-once.ts'
import { orderedPersistence } from '../hub/broker/order.ts'
import { reserveStoredPacketIds } from '../hub/broker/packet-ids.ts'
import { HUB_LEVELDB_SIZES } from '../hub/leveldb.ts'
import { publishInLanes } from './publish-lanes.ts'

const SEQUENTIAL = 1000
const PUBLISHERS = 4
const EACH = 2500
const WINDOW = 500
const ROUNDS = 3

interface Result {
  p50: number
  p99: number
  perSecond: number
}

const pct = (xs: number[], p: number): number =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))] ?? NaN
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN

async function round(dir: string, storeFirst: boolean, n: number): Promise<Result> {
  const db = new Level<string, Buffer>(join(dir, `db-${n}`), {
    valueEncoding: 'buffer',
    ...HUB_LEVELDB_SIZES,
  })
  await db.open()
  const once = forwardOnce()
  const aedes = await Aedes.createBroker({
    persistence: (storeFirst
      ? replayOnce(orderedPersistence(aedesPersistenceLevel(db) as object), once)
      : orderedPersistence(aedesPersistenceLevel(db) as object)) as never,
    preConnect: storeFirst
      ? (client, packet, cb) =>
          once.preConnect(client, packet, (err, ok) =>
            err || !ok ? cb(err, ok) : reserveStoredPacketIds(client, packet, cb),
          )
      : once.preConnect,
    authorizeForward: once.authorizeForward,
  })
  if (storeFirst) ackAfterStore(aedes)
  const server: Server = createServer(aedes.handle)
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const url = `mqtt://127.0.0.1:${(server.address() as AddressInfo).port}`
  const away = await mqtt.connectAsync(url, { clientId: `away${n}`, clean: false, reconnectPeriod: 0 })
  await away.subscribeAsync('ack/#', { qos: 1 })
  await away.endAsync()
  const sub = await mqtt.connectAsync(url, { clientId: `sub${n}`, clean: false, reconnectPeriod: 0 })
  await sub.subscribeAsync('ack/#', { qos: 1 })
  let received = 0
  sub.on('message', () => received++)

  const one = await mqtt.connectAsync(url, { clientId: `one${n}`, reconnectPeriod: 0 })
  const latencies: number[] = []
  for (let i = 0; i < SEQUENTIAL; i++) {
    const t0 = performance.now()
    await one.publishAsync('ack/one', String(i), { qos: 1 })
    latencies.push(performance.now() - t0)
  }
  await one.endAsync()

  const pubs = await Promise.all(
    Array.from({ length: PUBLISHERS }, (_, i) =>
      mqtt.connectAsync(url, { clientId: `p${n}-${i}`, reconnectPeriod: 0 }),
    ),
  )
  const want = SEQUENTIAL + PUBLISHERS * EACH
  const start = performance.now()
  await publishInLanes(pubs, 'ack/p', EACH, WINDOW, 1)
  while (received < want) await new Promise((r) => setTimeout(r, 5))
  const seconds = (performance.now() - start) / 1000
  await Promise.all([...pubs, sub].map((c) => c.endAsync()))
  await new Promise<void>((r) => aedes.close(() => r()))
  await new Promise<void>((r) => server.close(() => r()))
  await db.close()
  return { p50: pct(latencies, 50), p99: pct(latencies, 99), perSecond: (PUBLISHERS * EACH) / seconds }
}

const dir = await mkdtemp(join(tmpdir(), 'svc-ack-bench-'))
try {
  const base: Result[] = []
  const fixed: Result[] = []
  for (let r = 0; r < ROUNDS; r++) {
    base.push(await round(dir, false, 2 * r))
    fixed.push(await round(dir, true, 2 * r + 1))
  }
  const line = (name: string, rs: Result[]): string =>
    `${name}: PUBACK p50 ${median(rs.map((r) => r.p50)).toFixed(3)} ms, p99 ${median(rs.map((r) => r.p99)).toFixed(3)} ms; ` +
    `${Math.round(median(rs.map((r) => r.perSecond)))} msg/s acknowledged and delivered (medians of ${ROUNDS})`
  process.stdout.write(`${line('baseline     PUBACK first (Aedes)', base)}\n`)
  process.stdout.write(`${line('ack-after-store PUBACK once stored', fixed)}\n`)
  process.stdout.write(
    `ratio: p50 ${(median(fixed.map((r) => r.p50)) / median(base.map((r) => r.p50))).toFixed(2)}x, ` +
      `throughput ${(median(fixed.map((r) => r.perSecond)) / median(base.map((r) => r.perSecond))).toFixed(2)}x\n`,
  )
} finally {
  await rm(dir, { recursive: true, force: true })
}
