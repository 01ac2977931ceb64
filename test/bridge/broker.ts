// A real Aedes broker on loopback and real mqtt.js clients, stopped when the test ends.
import { createServer, type Server, type Socket } from 'node:net'
import { Aedes } from 'aedes'
import mqtt, { type MqttClient } from 'mqtt'
import { freePort } from '../helpers/ports.ts'
import type { Teardown } from '../helpers/tmp.ts'
import type { PublishFn } from '../../bridge/index.ts'

export interface Broker {
  url: string
  port: number
  stop(): Promise<void>
  /** Starts it again on the same port (after `stop`), for broker-outage tests. */
  restart(): Promise<void>
}

export async function startBroker(t: Teardown): Promise<Broker> {
  const port = await freePort()
  let broker: Aedes
  let server: Server
  const sockets = new Set<Socket>()
  async function up(): Promise<void> {
    broker = await Aedes.createBroker()
    server = createServer((socket) => {
      sockets.add(socket)
      socket.once('close', () => sockets.delete(socket))
      broker.handle(socket)
    })
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(port, '127.0.0.1', () => resolve())
    })
  }
  let running = false
  async function stop(): Promise<void> {
    if (!running) return
    running = false
    await new Promise<void>((r) => broker.close(() => r()))
    for (const s of sockets) s.destroy()
    await new Promise<void>((r) => server.close(() => r()))
  }
  await up()
  running = true
  t.teardown(stop)
  return {
    url: `mqtt://127.0.0.1:${port}`,
    port,
    stop,
    async restart() {
      await up()
      running = true
    },
  }
}

export async function connectClient(
  t: Teardown,
  url: string,
  opts: mqtt.IClientOptions = {},
): Promise<MqttClient> {
  const c = await mqtt.connectAsync(url, { reconnectPeriod: 0, ...opts })
  t.teardown(() => c.endAsync(true))
  return c
}

/** The hub's wiring, as the hub engineer does it: bridge `publish` → mqtt.js publishAsync. */
export function publishVia(client: MqttClient): PublishFn {
  return async (topic, payload, opts) => {
    await client.publishAsync(topic, payload, opts)
  }
}

export interface Received {
  topic: string
  payload: string
  retain: boolean
}

/** Collects messages on `filter`; `until(n)` resolves once n have arrived. */
export async function collect(client: MqttClient, filter: string) {
  const got: Received[] = []
  let waiters: Array<{ n: number; resolve: () => void }> = []
  client.on('message', (topic, payload, packet) => {
    got.push({ topic, payload: payload.toString('utf8'), retain: packet.retain })
    waiters = waiters.filter((w) => (got.length >= w.n ? (w.resolve(), false) : true))
  })
  await client.subscribeAsync(filter, { qos: 1 })
  return {
    got,
    until(n: number): Promise<void> {
      if (got.length >= n) return Promise.resolve()
      return new Promise((resolve) => waiters.push({ n, resolve }))
    },
  }
}
