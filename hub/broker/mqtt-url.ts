// A broker URL turned into mqtt.js connect options with the WHATWG URL parser. Given a string,
// mqtt.js 5.16 (the latest) parses it with the legacy url.parse(), which Node 24 reports on
// stderr as deprecated (DEP0169); given options, it parses nothing. Pure.
import type { MqttProtocol } from 'mqtt'
import { fail, type Result } from '../../errors/codes.ts'

/**
 * The schemes broker.url may use: TCP, TLS and WebSocket brokers. `tls:` is what mqtt.js treats
 * as `mqtts:` (same TLS stream, same default port 8883) but leaves out of its types.
 */
const SCHEMES: Readonly<Record<string, MqttProtocol>> = {
  mqtt: 'mqtt',
  tcp: 'tcp',
  mqtts: 'mqtts',
  tls: 'mqtts',
  ws: 'ws',
  wss: 'wss',
}

export interface MqttUrlOptions {
  protocol: MqttProtocol
  host: string
  port?: number
  /** WebSocket brokers only: the HTTP path and query (mqtt.js drops it for TCP/TLS). */
  path?: string
  username?: string
  password?: string
}

/** A URL that is not a broker's is BAD_CONFIG: it comes from hub.toml's broker.url. */
export type MqttUrlResult = Result<{ value: MqttUrlOptions }>

export function mqttUrlOptions(url: string): MqttUrlResult {
  let u: URL
  try {
    u = new URL(url)
  } catch {
    return fail('BAD_CONFIG', `not a URL: ${JSON.stringify(url)}`)
  }
  if (!u.hostname) return fail('BAD_CONFIG', `no host in ${JSON.stringify(url)}`)
  const scheme = u.protocol.replace(/:$/, '')
  const protocol = Object.hasOwn(SCHEMES, scheme) ? SCHEMES[scheme] : undefined
  if (!protocol)
    return fail(
      'BAD_CONFIG',
      `${JSON.stringify(scheme)} is not a broker scheme (${Object.keys(SCHEMES).join(', ')})`,
    )
  const opts: MqttUrlOptions = {
    protocol,
    // WHATWG keeps the brackets of an IPv6 host; sockets want the bare address.
    host: u.hostname.replace(/^\[(.*)\]$/, '$1'),
  }
  if (u.port !== '') opts.port = Number(u.port)
  if (protocol.startsWith('ws')) opts.path = `${u.pathname}${u.search}`
  if (u.username !== '') opts.username = decodeURIComponent(u.username)
  if (u.password !== '') opts.password = decodeURIComponent(u.password)
  return { ok: true, value: opts }
}
