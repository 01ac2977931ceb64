// `svc hub status` as a user runs it, against a real `svc hub` process: on its embedded broker and
// on an external Mosquitto, after events went through its MQTT trigger; the text a person reads
// when the hub is behind; and the clear errors with no hub running or a stray argument.
import t, { type Test } from 'tap'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import mqtt from 'mqtt'
import { fileURLToPath } from 'node:url'
import { svcCli } from '../helpers/cli.ts'
import { EMBEDDED_QUEUE, EXTERNAL_QUEUE, type HubStatus } from '../../hub/api/status.ts'
import { formatHubStatus } from '../../cli/hub-status.ts'
import { startHubChild } from '../helpers/hub-process.ts'
import { noMosquitto, startMosquitto } from '../helpers/mosquitto.ts'
import { freePort } from '../helpers/ports.ts'
import { tempDir } from '../helpers/tmp.ts'
import { waitFor } from '../helpers/wait.ts'

const root = fileURLToPath(new URL('../..', import.meta.url))

/** `svc` in this process, on the hub whose home is `home`. */
const svcIn = (home: string) => svcCli({ SVC_HOME: home }, root)

async function writeHome(home: string, broker: string, extra = ''): Promise<void> {
  await mkdir(join(home, 'sops', 'answer'), { recursive: true })
  await writeFile(
    join(home, 'sops', 'answer', 'SOP.toml'),
    '[sop]\nname = "answer"\ndescription = "d"\nexecution_mode = "auto"\nmax_concurrent = 100\nagent = "none"\n\n[[triggers]]\ntype = "mqtt"\ntopic = "in/+"\ncondition = "$.v >= 10"\n',
  )
  await writeFile(
    join(home, 'sops', 'answer', 'SOP.md'),
    '# answer\n\n## Steps\n\n1. **Answer**\n   - call: {"tool":"mqtt_publish","args":{"topic":"out/{{trigger.seq}}","payload":"{{trigger}}","qos":1}}\n   - terminal: true\n',
  )
  await writeFile(
    join(home, 'hub.toml'),
    `[hub]\nsops_dir = "${join(home, 'sops')}"\n[broker]\n${broker}\n[webhook]\nenabled = false\n[api]\nport = 0\n[console]\nport = 0\n${extra}`,
  )
}

/** Sends `n` events (half pass the condition), waits for the answers, returns `svc hub status --json`. */
async function afterEvents(t: Test, home: string, url: string, n: number): Promise<HubStatus> {
  const sub = await mqtt.connectAsync(url, { reconnectPeriod: 0 })
  const pub = await mqtt.connectAsync(url, { reconnectPeriod: 0 })
  t.teardown(async () => {
    await sub.endAsync(true)
    await pub.endAsync(true)
  })
  let answers = 0
  sub.on('message', () => answers++)
  await sub.subscribeAsync('out/+', { qos: 1 })
  for (let i = 0; i < n; i++)
    await pub.publishAsync(`in/${i}`, `{"seq":${i},"v":${i % 2 ? 10 : 0}}`, { qos: 1 })
  await waitFor(() => answers >= n / 2, 'the answers')
  const r = await svcIn(home)('hub', 'status', '--json')
  t.equal(r.code, 0)
  return JSON.parse(r.out) as HubStatus
}

t.test('svc hub status on the embedded broker: runs, broker, the MQTT backlog, the history', async (t) => {
  const home = await tempDir(t)
  const port = await freePort()
  // A 4.32 s age bound makes retention look every 1.08 s (retentionEveryMs), so the oldest run is
  // read soon; the runs all fit the segment being written, which retention never drops.
  await writeHome(home, `port = ${port}`, '[history]\nmax_age_days = 0.00005\nmax_mb = 512\n')
  const hub = await startHubChild(t, home)
  const s = await afterEvents(t, home, `mqtt://127.0.0.1:${port}`, 20)
  t.equal(s.state, 'online')
  t.equal(s.pid, hub.pid, 'the process that answers')
  t.match(s.broker, { kind: 'embedded', connected: true, queue_limit: EMBEDDED_QUEUE })
  t.same(s.sops, { loaded: 1, invalid: 0 })
  t.ok(s.mqtt, 'the MQTT trigger session is there')
  t.equal(s.mqtt?.inFlight, 0, 'every event admitted')
  t.ok((s.mqtt?.peak ?? 0) >= 1, 'the events went through it')
  t.equal(s.mqtt?.cap, 10_000)
  t.equal(s.mqtt?.lagging, false)

  const r = await svcIn(home)('hub', 'status')
  t.equal(r.code, 0)
  const text = r.out
  t.match(text, new RegExp(`^hub +online since .* pid ${hub.pid}`, 'm'))
  t.match(text, /^broker +embedded mqtt:\/\/127\.0\.0\.1:\d+, connected$/m)
  t.match(text, /^sops +1 loaded, 0 invalid$/m)
  t.match(text, /^mqtt +keeping up: 0 in flight \(peak \d+ of 10000, reading stopped 0 times/m)

  // The history: the first run's creation time once a retention pass has looked, the log's size
  // and hub.toml's bounds.
  const runs = JSON.parse((await svcIn(home)('sop', 'runs', '--json', '--limit', '1000')).out) as {
    runs: { createdAt: number }[]
  }
  t.equal(runs.runs.length, 10, 'one run per event that passed the condition')
  const first = new Date(Math.min(...runs.runs.map((r) => r.createdAt))).toISOString()
  let h = s.history
  await waitFor(async () => {
    const r = await svcIn(home)('hub', 'status', '--json')
    h = (JSON.parse(r.out) as HubStatus).history
    return h?.oldest_at === first
  }, 'a retention pass to read the oldest run')
  t.ok(h!.log_bytes > 0, `the log holds the runs (${h!.log_bytes} bytes)`)
  t.equal(h!.segments, 1, 'ten small runs fit one segment')
  t.equal(h!.max_mb, 512)
  t.ok(Math.abs(h!.max_age_days - 0.00005) < 1e-12, `max_age_days ${h!.max_age_days}`)
  const line = /^history +(.*)$/m.exec((await svcIn(home)('hub', 'status')).out)?.[1]
  t.match(
    line,
    new RegExp(
      `^back to ${first.replace(/\./g, '\\.')} \\(\\d+[smh] ago\\), \\d+(\\.\\d)? (B|KiB) of 512 MiB in 1 segment; finished runs older than 4s are dropped$`,
    ),
  )
})

t.test(
  'svc hub status on an external Mosquitto names the limit that drops events',
  { skip: noMosquitto },
  async (t) => {
    const mosq = await startMosquitto(t)
    const home = await tempDir(t)
    await writeHome(home, `url = "${mosq.url}"\nclient_id = "status-hub"`)
    await startHubChild(t, home)
    const s = await afterEvents(t, home, mosq.url, 10)
    t.match(s.broker, { kind: 'external', url: mosq.url, connected: true, queue_limit: EXTERNAL_QUEUE })
    t.match(s.broker.queue_limit, /max_queued_messages, default 1000/)
    t.equal(s.mqtt?.inFlight, 0)
    t.ok((s.mqtt?.peak ?? 0) >= 1)
  },
)

t.test('what a person reads when the hub is behind', async (t) => {
  const base: HubStatus = {
    state: 'online',
    since: '2026-11-25T10:00:00.000Z',
    at: '2026-11-25T11:02:03.000Z',
    client_id: 'svc-hub',
    version: '0.1.0',
    sops: { loaded: 2, invalid: 1 },
    boards: { vend1: 'online' },
    runs: { pending: 3, running: 40, waiting_approval: 1, paused_checkpoint: 0 },
    approvals_pending: 1,
    held: { count: 0, oldest_at: null },
    deferred: { count: 2, oldest_at: '2026-11-25T11:00:00.000Z' },
    history: {
      oldest_at: '2026-11-19T08:01:00.000Z',
      log_bytes: 432_013_312,
      segments: 52,
      max_age_days: 30,
      max_mb: 1024,
    },
    pid: 4242,
    uptime_s: 3723,
    broker: {
      kind: 'external',
      url: 'mqtt://mosquitto.lan:1883',
      connected: true,
      queue_limit: EXTERNAL_QUEUE,
    },
    mqtt: {
      inFlight: 812,
      peak: 1000,
      paused: 0,
      behind: 1,
      repeats: 0,
      busySeconds: 7,
      cap: 10_000,
      lagging: true,
    },
  }
  const text = formatHubStatus(base)
  t.match(text, /up 1h 2m 3s/)
  t.match(
    text,
    /^mqtt +BEHIND: 812 in flight without a break for 7 s \(peak 1000 of 10000, reading stopped 0 times, behind 1 time, 0 repeats\)$/m,
  )
  t.match(text, /Mosquitto max_queued_messages, default 1000/)
  t.match(text, /raise that limit/)
  t.match(text, /^boards +vend1 online$/m)
  t.match(text, /^triggers +0 held, 2 deferred \(oldest 2026-11-25T11:00:00\.000Z\)$/m)
  t.match(
    text,
    /^history +back to 2026-11-19T08:01:00\.000Z \(6d ago\), 412 MiB of 1\.0 GiB in 52 segments; finished runs older than 30 days are dropped$/m,
  )
  t.match(
    formatHubStatus({ ...base, history: { ...base.history!, oldest_at: null, segments: 1 } }),
    /^history +no runs when retention last looked, at most a minute ago, 412 MiB of 1\.0 GiB in 1 segment;/m,
  )
  t.notMatch(formatHubStatus({ ...base, history: null }), /^history/m, 'no line without a history log')
  const embedded = formatHubStatus({
    ...base,
    broker: { ...base.broker, kind: 'embedded', queue_limit: EMBEDDED_QUEUE },
    mqtt: { ...base.mqtt!, inFlight: 10_000, busySeconds: 0, paused: 3 },
  })
  t.match(embedded, /^mqtt +BEHIND: 10000 in flight \(peak 1000 of 10000, reading stopped 3 times/m)
  t.notMatch(embedded, /raise that limit/, 'the embedded broker has no limit to raise')
  t.match(formatHubStatus({ ...base, mqtt: null }), /^mqtt +no MQTT trigger session$/m)
})

t.test('no hub running, or a stray argument: a clear error', async (t) => {
  const home = await tempDir(t)
  const svc = svcIn(home)
  let r = await svc('hub', 'status')
  t.equal(r.code, 1)
  t.match(r.err, /hub-api\.json|no hub|not running|svc hub run/)
  r = await svc('hub', 'status', 'now')
  t.equal(r.code, 2)
  t.match(r.err, /unexpected argument "now"/)
  r = await svc('hub', 'status', '--bogus')
  t.equal(r.code, 2)
})
