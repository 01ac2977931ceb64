// What the embedded broker writes to a connection goes out once per turn of the event loop.
//
// Aedes writes each packet from a callback of its own (lib/client.js `deliverQoS` delivers from a
// setImmediate, a PUBACK follows its publish's callback), and mqtt-packet corks the socket only
// until the next tick: every packet was one `writev` system call. In a peer burst those calls
// were 11% of the hub's main thread (bench/README.md, peer), one per PUBACK and one per delivery.
// Here the first write goes out as before (an isolated event's answer waits for nothing), and
// the first write also schedules a setImmediate; a second one before it runs corks the socket
// until it does, so everything written in between leaves in one call. Such a packet waits at
// most until the loop's next check phase, as a write waits for the end of a pass of Mosquitto's
// loop.
//
// Only for sockets that write several chunks at once (`_writev`: TCP and TLS); a WebSocket
// stream sends each chunk as its own frame anyway.
import type { Duplex } from 'node:stream'

interface Gathering {
  _writev?: unknown
}

/** Makes `conn` send what is written during a turn of the event loop, after its first write, in one write. */
export function writePerTurn(conn: Duplex): void {
  if (typeof (conn as Gathering)._writev !== 'function') return
  const write = conn.write.bind(conn) as (...args: unknown[]) => boolean
  let wrote = false
  let corked = false
  const endTurn = (): void => {
    wrote = false
    if (!corked) return
    corked = false
    conn.uncork()
  }
  conn.write = ((...args: unknown[]) => {
    if (!wrote) {
      wrote = true
      setImmediate(endTurn)
    } else if (!corked && !conn.destroyed) {
      corked = true
      conn.cork()
    }
    return write(...args)
  }) as Duplex['write']
}
