// The embedded broker's persistence answered in call order (hub/broker/order.ts) against the same
// Aedes + aedes-persistence-level without it (the baseline), in one process. Rounds alternate, so
// machine load falls on both alike; medians of 5. Load: 4 publishers × 5 000 QoS 1 (then QoS 2)
// messages, up to 500 unacknowledged each, to one clean and one persistent subscriber. Prints
// messages/s delivered to both and the backward steps seen (publish order broken), per variant.
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
import { forwardOnce } from '../hub/broker/forward-once.ts'
import { orderedPersistence } from '../hub/broker/order.ts'
import { HUB_LEVELDB_SIZES } from '../hub/leveldb.ts'
import { publishInLanes } from './publish-lanes.ts'

const PUBLISHERS = 4
const EACH = 5000
const WINDOW = 500
const ROUNDS = 5

interface Result {
  perSecond: number
  backward: number
}

async function round(dir: string, ordered: boolean, qos: 1 | 2, n: number): Promise<Result> {
  const db = new Level<string, Buffer>(join(dir, `db-${n}`), {
    valueEncoding: 'buffer',
    ...HUB_LEVELDB_SIZES,
  })
  await db.open()
  const raw = aedesPersistenceLevel(db) as object
  const once = forwardOnce()
  const aedes = await Aedes.createBroker({
    persistence: (ordered ? orderedPersistence(raw) : raw) as never,
    preConnect: once.preConnect,
    authorizeForward: once.authorizeForward,
  })
  const server: Server = createServer(aedes.handle)
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const url = `mqtt://127.0.0.1:${(server.address() as AddressInfo).port}`
  const subs = await Promise.all(
    [true, false].map((clean, i) =>
      mqtt.connectAsync(url, { clientId: `s${n}-${i}`, clean, reconnectPeriod: 0 }),
    ),
  )
  let received = 0
  let backward = 0
  let done: () => void = () => {}
  const all = new Promise<void>((r) => (done = r))
  for (const s of subs) {
    await s.subscribeAsync('order/#', { qos })
    const last = new Array<number>(PUBLISHERS).fill(-1)
    s.on('message', (_t, payload) => {
      const [p, j] = payload.toString().split(':').map(Number) as [number, number]
      if (j < (last[p] as number)) backward++
      last[p] = j
      if (++received === 2 * PUBLISHERS * EACH) done()
    })
  }
  const pubs = await Promise.all(
    Array.from({ length: PUBLISHERS }, (_, i) =>
      mqtt.connectAsync(url, { clientId: `p${n}-${i}`, reconnectPeriod: 0 }),
    ),
  )
  const start = performance.now()
  await publishInLanes(pubs, 'order/p', EACH, WINDOW, qos)
  await all
  const seconds = (performance.now() - start) / 1000
  await Promise.all([...pubs, ...subs].map((c) => c.endAsync()))
  await new Promise<void>((r) => aedes.close(() => r()))
  await new Promise<void>((r) => server.close(() => r()))
  await db.close()
  return { perSecond: (2 * PUBLISHERS * EACH) / seconds, backward }
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN

const dir = await mkdtemp(join(tmpdir(), 'svc-order-bench-'))
try {
  let n = 0
  for (const qos of [1, 2] as const) {
    const base: Result[] = []
    const fixed: Result[] = []
    for (let r = 0; r < ROUNDS; r++) {
      base.push(await round(dir, false, qos, n++))
      fixed.push(await round(dir, true, qos, n++))
    }
    const line = (name: string, rs: Result[]): string =>
      `${name} QoS ${qos}: ${Math.round(median(rs.map((r) => r.perSecond)))} msg/s delivered (median of ${ROUNDS}), backward steps ${rs.map((r) => r.backward).join('/')}`
    process.stdout.write(`${line('baseline  unordered persistence', base)}\n`)
    process.stdout.write(`${line('ordered   order.ts persistence   ', fixed)}\n`)
    process.stdout.write(
      `          ratio ${(median(fixed.map((r) => r.perSecond)) / median(base.map((r) => r.perSecond))).toFixed(2)}x\n`,
    )
  }
} finally {
  await rm(dir, { recursive: true, force: true })
}
