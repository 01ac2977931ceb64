// Is a listener's bind address loopback? Mosquitto 2.0's rule hangs on this: anonymous clients
// only on a listener bound to loopback. Pure: it reads the address as written, resolves nothing,
// so a name other than `localhost` counts as beyond loopback.
import { isIP } from 'node:net'

export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[(.*)\]$/, '$1').toLowerCase()
  if (h === 'localhost') return true
  if (isIP(h) === 4) return h.startsWith('127.')
  if (isIP(h) === 6) {
    if (h === '::1' || /^(0{1,4}:){7}0{0,3}1$/.test(h)) return true
    // IPv4-mapped loopback (::ffff:127.0.0.1).
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(h)
    return mapped !== null && (mapped[1] as string).startsWith('127.')
  }
  return false
}
