// What the will-per-board design costs the hub on an external broker (hub/daemon/
// board-availability.ts): the hub's heap and RSS with N availability sessions connected, beside
// the same process with only the main session, measured in this run. The broker is an Aedes on
// loopback in this process; its own share is counted too, so the figure is an upper bound for
// the hub alone.
import { createServer } from 'node:net'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { Aedes } from 'aedes'
import mqtt from 'mqtt'
import { willSessionAvailability } from '../hub/daemon/board-availability.ts'

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void
const silent = { info: () => undefined, warn: () => undefined, error: () => undefined }

function settle(): { heap: number; rss: number } {
  for (let i = 0; i < 4; i++) gc()
  const m = process.memoryUsage()
  return { heap: m.heapUsed, rss: m.rss }
}

const broker = await Aedes.createBroker()
const server = createServer((s) => broker.handle(s))
await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
const port = (server.address() as { port: number }).port
const url = `mqtt://127.0.0.1:${port}`
const main = await mqtt.connectAsync(url, { clientId: 'bench-main', clean: false })

// Warm up the code paths once so the baseline holds the same modules.
const warm = await willSessionAvailability({
  base: { host: '127.0.0.1', port },
  clientId: 'warm',
  boards: ['w'],
  log: silent,
})
await warm.close()
await new Promise((r) => setTimeout(r, 200))

const base = settle()
console.log(
  `baseline (main session only): heap ${(base.heap / 1e6).toFixed(1)} MB, rss ${(base.rss / 1e6).toFixed(1)} MB`,
)
for (const n of [1, 4, 16]) {
  const boards = Array.from({ length: n }, (_, i) => `b${i}`)
  const t0 = performance.now()
  const a = await willSessionAvailability({
    base: { host: '127.0.0.1', port },
    clientId: `bench-${n}`,
    boards,
    log: silent,
  })
  const connectMs = performance.now() - t0
  for (const b of boards) a.set(b, 'online')
  await new Promise((r) => setTimeout(r, 200))
  const m = settle()
  console.log(
    `${String(n).padStart(2)} availability session(s): heap +${((m.heap - base.heap) / 1e3 / n).toFixed(0)} kB per board, ` +
      `rss +${((m.rss - base.rss) / 1e3 / n).toFixed(0)} kB per board (broker side included), all connected in ${connectMs.toFixed(0)} ms`,
  )
  await a.close()
  await new Promise((r) => setTimeout(r, 200))
}
await main.endAsync()
await new Promise<void>((r) => broker.close(() => r()))
server.close()
