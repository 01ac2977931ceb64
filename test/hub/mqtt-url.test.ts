// broker.url through the WHATWG parser must reach mqtt.js exactly as its own (deprecated)
// url.parse() reading of the same string would: same host, port, protocol, path, credentials.
import t from 'tap'
import mqtt from 'mqtt'
import { mqttUrlOptions } from '../../hub/broker/mqtt-url.ts'
import { startEmbeddedBroker } from './embedded-broker.ts'

const FIELDS = ['protocol', 'host', 'hostname', 'port', 'path', 'username', 'password'] as const

/** The options mqtt.js settles on for a connect call (port 1 refuses at once; nothing is sent). */
function settled(arg: string | mqtt.IClientOptions): Record<string, unknown> {
  const c =
    typeof arg === 'string'
      ? mqtt.connect(arg, { reconnectPeriod: 0 })
      : mqtt.connect({ ...arg, reconnectPeriod: 0 })
  c.on('error', () => undefined)
  const o = c.options as Record<string, unknown>
  c.end(true)
  return Object.fromEntries(FIELDS.map((f) => [f, o[f]]))
}

t.test('the same options as mqtt.js reading the URL itself', async (t) => {
  for (const url of [
    'mqtt://127.0.0.1:1',
    'mqtt://127.0.0.1',
    'tcp://localhost:1',
    'mqtts://127.0.0.1:1',
    'mqtt://[::1]:1',
    'mqtt://hub%40site:p%2Fss%20w@127.0.0.1:1',
    'mqtt://only-user@127.0.0.1:1',
    'ws://127.0.0.1:1',
    'ws://127.0.0.1:1/mqtt?x=1',
    'wss://user:pw@127.0.0.1:1/a/b',
  ]) {
    const r = mqttUrlOptions(url)
    if (!r.ok) {
      t.fail(`${url}: ${r.error}`)
      continue
    }
    t.same(settled(r.value), settled(url), url)
  }
})

t.test('a colon percent-encoded in the password stays in the password', async (t) => {
  // mqtt.js splits the decoded "user:pass" at its last colon, so it would read this one as
  // user "hub:p", password "ss"; RFC 3986 puts the colon in the password, and so do we.
  const r = mqttUrlOptions('mqtt://hub:p%3Ass@127.0.0.1:1')
  t.same(r, {
    ok: true,
    value: { protocol: 'mqtt', host: '127.0.0.1', port: 1, username: 'hub', password: 'p:ss' },
  })
})

t.test('tls: is mqtts: (mqtt.js treats them alike; its types know only mqtts)', async (t) => {
  const r = mqttUrlOptions('tls://10.0.0.2:8884')
  t.same(r, { ok: true, value: { protocol: 'mqtts', host: '10.0.0.2', port: 8884 } })
})

t.test('what is not a broker URL says why', async (t) => {
  t.same(mqttUrlOptions('not a url'), { ok: false, code: 'BAD_CONFIG', error: 'not a URL: "not a url"' })
  t.same(mqttUrlOptions('http://x:1'), {
    ok: false,
    code: 'BAD_CONFIG',
    error: '"http" is not a broker scheme (mqtt, tcp, mqtts, tls, ws, wss)',
  })
  t.same(mqttUrlOptions('mqtt://'), { ok: false, code: 'BAD_CONFIG', error: 'no host in "mqtt://"' })
  t.same(mqttUrlOptions('constructor://x'), {
    ok: false,
    code: 'BAD_CONFIG',
    error: '"constructor" is not a broker scheme (mqtt, tcp, mqtts, tls, ws, wss)',
  })
})

t.test('a real broker is reached over TCP and WebSocket with the converted options', async (t) => {
  const broker = await startEmbeddedBroker(t, { wsPort: 0 })
  for (const url of [broker.url, broker.wsUrl!]) {
    const r = mqttUrlOptions(url)
    if (!r.ok) throw new Error(r.error)
    const c = await mqtt.connectAsync({ ...r.value, reconnectPeriod: 0 })
    await c.subscribeAsync('t/x', { qos: 1 })
    const got = new Promise<string>((resolve) => c.once('message', (_topic, p) => resolve(p.toString())))
    await c.publishAsync('t/x', `via ${r.value.protocol}`, { qos: 1 })
    t.equal(await got, `via ${r.value.protocol}`, url)
    await c.endAsync()
  }
})
