// A free TCP port on loopback for a child that binds it later. It is taken below the kernel's
// ephemeral range: a port the kernel hands out (to listen(0) or to an outgoing connection of any
// test running alongside) could be taken again before the child binds it, a port below the range
// only by another caller of this helper picking the same one at random.
import { readFileSync } from 'node:fs'
import { createServer } from 'node:net'

const given = new Set<number>()

/** The first port of the kernel's ephemeral range (Linux's default when it cannot be read). */
function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0])
    if (Number.isInteger(low) && low > 1024) return low
  } catch {
    // Not Linux: the default below is Linux's, and IANA's range (49152–65535) starts above it.
  }
  return 32768
}

const LOW = 10_000
const HIGH = ephemeralLow() - 1

function bindable(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.unref()
    srv.on('error', reject)
    srv.listen(port, '127.0.0.1', () => {
      const addr = srv.address()
      srv.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port'))))
    })
  })
}

export async function freePort(): Promise<number> {
  if (HIGH - LOW > 1000) {
    for (let i = 0; i < 50; i++) {
      const port = LOW + Math.floor(Math.random() * (HIGH - LOW + 1))
      if (given.has(port)) continue
      try {
        await bindable(port)
        given.add(port)
        return port
      } catch {
        // Someone holds it: pick another.
      }
    }
  }
  const port = await bindable(0)
  given.add(port)
  return port
}
