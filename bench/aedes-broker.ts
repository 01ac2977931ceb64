// A bare Aedes broker on a free loopback port, in memory, for benches that need a broker between
// the bridge and a subscriber but are not measuring the hub's own broker.
import { createServer, type Socket } from 'node:net'
import { Aedes } from 'aedes'

export async function startBareBroker(): Promise<{ url: string; stop(): Promise<void> }> {
  const broker = await Aedes.createBroker()
  const sockets = new Set<Socket>()
  const server = createServer((s) => {
    sockets.add(s)
    s.once('close', () => sockets.delete(s))
    broker.handle(s)
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
  const addr = server.address()
  const port = typeof addr === 'object' && addr ? addr.port : 0
  return {
    url: `mqtt://127.0.0.1:${port}`,
    async stop() {
      await new Promise<void>((r) => broker.close(() => r()))
      for (const s of sockets) s.destroy()
      await new Promise<void>((r) => server.close(() => r()))
    },
  }
}
