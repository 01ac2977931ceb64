// A full disk refused honestly and survived without a person (hub/README.md, "A full disk"):
// `svc hub` as a child process, its data folder on a small tmpfs the test mounts, QoS 1 events
// from real mqtt.js clients while a filler file eats the space, then the filler removed.
//   - the embedded broker: the hub refuses before anything fails (the reserve), acknowledges no
//     event while it refuses, says so once (log, `svc hub status`, `svc/hub/state`), and once the
//     filler is gone every event held meanwhile is acknowledged and run, without a restart;
//   - the disk filled faster than the watcher (reserve 0): a real write fails, the hub ends up
//     refusing all the same with one log line, reopens its stores once there is room, and runs
//     every event it acknowledged;
//   - an external Mosquitto, with an MQTT 5 and an MQTT 3.1.1 publisher: the hub stops reading
//     its session while it refuses, and every event Mosquitto acknowledged runs once there is room.
// Every event a broker acknowledged must have its run; no run is created while the hub refuses.
import { execFileSync } from 'node:child_process'
import { open, readFile, rm, statfs, writeFile, mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import mqtt, { type MqttClient } from 'mqtt'
import t, { type Test } from 'tap'
import { main } from '../../cli/main.ts'
import type { HubStatus } from '../../hub/api/status.ts'
import { type HubChild, startHubChild } from '../helpers/hub-process.ts'
import { noMosquitto, startMosquitto } from '../helpers/mosquitto.ts'
import { freePort } from '../helpers/ports.ts'
import { tempDir } from '../helpers/tmp.ts'
import { waitFor, waitForCount } from '../helpers/wait.ts'

const MiB = 1024 * 1024

/** A tmpfs of `mb` MiB mounted for the test, or why not (not root, no mount). */
async function smallDisk(t: Test, mb: number): Promise<{ mnt: string } | { error: string }> {
  const mnt = await tempDir(t, 'svc-small-disk-')
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${mb}m`, 'tmpfs', mnt], { stdio: 'pipe' })
  } catch (err) {
    return { error: String((err as { stderr?: Buffer }).stderr ?? err).trim() }
  }
  t.teardown(() => execFileSync('umount', ['-l', mnt], { stdio: 'pipe' }))
  return { mnt }
}

const mountProbe = await (async () => {
  const probe = {
    teardowns: [] as (() => unknown)[],
    teardown: (fn: () => unknown) => probe.teardowns.push(fn),
  }
  const r = await smallDisk(probe as unknown as Test, 1)
  for (const fn of probe.teardowns.reverse()) await fn()
  return 'error' in r ? `needs a small tmpfs to fill (mount as root on Linux): ${r.error}` : false
})()

const freeBytes = async (dir: string): Promise<number> => {
  const s = await statfs(dir)
  return s.bavail * s.bsize
}

/** Writes `file` until the disk holding it has less than `below` bytes free, or is full (below 0). */
async function fill(file: string, below: number): Promise<void> {
  const fh = await open(file, 'a')
  const chunk = Buffer.alloc(256 * 1024, 1)
  try {
    for (;;) {
      if (below > 0 && (await freeBytes(file)) < below) return
      await fh.write(chunk)
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err
  } finally {
    await fh.close()
  }
}

const SOP_TOML = `[sop]
name = "answer"
description = "ev/<n> answered on out/<n>"
execution_mode = "auto"
max_concurrent = 100000
agent = "none"

[[triggers]]
type = "mqtt"
topic = "ev/+"
`
const SOP_MD = `# answer

## Steps

1. **Answer**
   - call: {"tool":"mqtt_publish","args":{"topic":"out/{{trigger.seq}}","payload":"{{trigger}}","qos":0}}
   - terminal: true
`

async function writeHome(home: string, dataDir: string, broker: string, reserveMb: number): Promise<void> {
  await mkdir(join(home, 'sops', 'answer'), { recursive: true })
  await writeFile(join(home, 'sops', 'answer', 'SOP.toml'), SOP_TOML)
  await writeFile(join(home, 'sops', 'answer', 'SOP.md'), SOP_MD)
  await writeFile(
    join(home, 'hub.toml'),
    `[hub]\nsops_dir = "${join(home, 'sops')}"\ndata_dir = "${dataDir}"\n[broker]\n${broker}\nclient_id = "disk-hub"\n` +
      `[api]\nport = 0\n[console]\nenabled = false\n[webhook]\nenabled = false\n[disk]\nreserve_mb = ${reserveMb}\n`,
  )
}

/** `svc hub status` as its user runs it: the text, and the JSON. */
async function status(home: string): Promise<{ text: string; json: HubStatus }> {
  const run = async (args: string[]): Promise<string> => {
    const out: string[] = []
    const err: string[] = []
    const code = await main(['hub', 'status', ...args], {
      out: (s) => void out.push(s),
      err: (s) => void err.push(s),
      env: { SVC_HOME: home },
      cwd: home,
    })
    if (code !== 0) throw new Error(`svc hub status exited ${code}: ${err.join('')}`)
    return out.join('')
  }
  // The JSON first: a wait on its state then reads the text after the state was reached (the
  // text read first could be from just before it, under load).
  const json = JSON.parse(await run(['--json'])) as HubStatus
  return { text: await run([]), json }
}

interface RunInfo {
  id: string
  seq: number
  state: string
  createdAt: number
}

/** Every run the hub recorded, from its local API (GET /sop/runs, then each run for its trigger). */
async function runs(home: string): Promise<RunInfo[]> {
  const info = JSON.parse(await readFile(join(home, 'hub-api.json'), 'utf8')) as { url: string }
  const token = (await readFile(join(home, 'hub.token'), 'utf8')).trim()
  const get = async (path: string): Promise<unknown> => {
    const r = await fetch(`${info.url}${path}`, { headers: { authorization: `Bearer ${token}` } })
    if (!r.ok) throw new Error(`GET ${path}: ${r.status} ${await r.text()}`)
    return r.json()
  }
  const ids: { id: string; state: string; createdAt: number }[] = []
  let cursor: string | null = null
  do {
    const page = (await get(
      `/sop/runs?limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    )) as { runs: { id: string; state: string; createdAt: number }[]; next: string | null }
    ids.push(...page.runs)
    cursor = page.next
  } while (cursor)
  const out: RunInfo[] = []
  for (let i = 0; i < ids.length; i += 50) {
    const batch = await Promise.all(
      ids.slice(i, i + 50).map(async (r) => {
        const { run } = (await get(`/sop/runs/${r.id}`)) as { run: { trigger: { payload: string } } }
        return { ...r, seq: (JSON.parse(run.trigger.payload) as { seq: number }).seq }
      }),
    )
    out.push(...batch)
  }
  return out
}

/** A client publishing `ev/<seq>` at QoS 1; every acknowledgement noted with the phase it came in. */
function publisher(client: MqttClient) {
  let seq = 0
  const acked = new Map<number, string>()
  const sent = new Set<number>()
  let phase = 'before'
  return {
    acked,
    sent,
    setPhase: (p: string) => void (phase = p),
    send(first = 0): number {
      const n = first || ++seq
      sent.add(n)
      client
        .publishAsync(`ev/${n}`, JSON.stringify({ seq: n }), { qos: 1 })
        .then(() => acked.set(n, phase))
        .catch(() => undefined)
      return n
    },
    /** Sends one event every `everyMs` until stop() (load while the disk fills). */
    keepSending(everyMs: number): { stop(): void } {
      const timer = setInterval(() => this.send(), everyMs)
      return { stop: () => clearInterval(timer) }
    },
  }
}

/** The hub's log lines (JSON) whose message starts with `prefix`. */
const logLines = (hub: HubChild, prefix: string): string[] =>
  hub
    .out()
    .split('\n')
    .filter((l) => l.includes(`"msg":"${prefix}`))

/** Every acknowledged seq has a completed run, none has two, and none was created while refusing. */
async function checkRuns(
  t: Test,
  home: string,
  acked: Iterable<number>,
  refusing: { from: number; to: number },
): Promise<void> {
  const want = [...acked]
  const all = await waitFor(
    async () => {
      const r = await runs(home)
      const done = new Set(r.filter((x) => x.state === 'completed').map((x) => x.seq))
      return want.every((n) => done.has(n)) ? r : undefined
    },
    'a completed run for every acknowledged event',
    { timeoutMs: 60_000 },
  )
  const bySeq = new Map<number, number>()
  for (const r of all) bySeq.set(r.seq, (bySeq.get(r.seq) ?? 0) + 1)
  t.same(
    [...bySeq].filter(([, n]) => n > 1),
    [],
    'no event started two runs',
  )
  t.same(
    // Created in the very millisecond the hub started or stopped refusing: admitted before, or after.
    all.filter((r) => r.createdAt > refusing.from && r.createdAt < refusing.to).map((r) => r.seq),
    [],
    'no run was created while the hub refused',
  )
  t.pass(`${want.length} acknowledged events, each with its completed run`)
}

t.test(
  'embedded broker: refused below the reserve, nothing acknowledged meanwhile, resumed without a restart',
  {
    skip: mountProbe,
  },
  async (t) => {
    const disk = await smallDisk(t, 32)
    if ('error' in disk) throw new Error(disk.error)
    const home = await tempDir(t)
    const port = await freePort()
    await writeHome(home, join(disk.mnt, 'data'), `port = ${port}`, 6)
    const hub = await startHubChild(t, home)
    const url = `mqtt://127.0.0.1:${port}`

    // MQTT 5 has a negative PUBACK (0x97, quota exceeded), but the embedded broker (Aedes) speaks
    // MQTT 3.1.1 only: an MQTT 5 client is refused at CONNECT, so it never hears a PUBACK at all.
    await t.rejects(
      mqtt.connectAsync(url, { protocolVersion: 5, reconnectPeriod: 0 }),
      /Unacceptable protocol version/,
      'an MQTT 5 client is refused at CONNECT by the embedded broker',
    )

    const watcher = await mqtt.connectAsync(url, { reconnectPeriod: 100 })
    t.teardown(() => watcher.endAsync(true))
    let hubState: { disk?: { state: string } } | null = null
    watcher.on('message', (topic, payload) => {
      if (topic === 'svc/hub/state' && payload.length > 0) hubState = JSON.parse(payload.toString())
    })
    await watcher.subscribeAsync('svc/hub/state', { qos: 1 })
    await waitFor(() => hubState?.disk?.state === 'ok', 'svc/hub/state to say the disk is ok')

    const client = await mqtt.connectAsync(url, {
      protocolVersion: 4,
      clientId: 'pub-311',
      reconnectPeriod: 200,
    })
    t.teardown(() => client.endAsync(true))
    const pub = publisher(client)
    for (let i = 0; i < 20; i++) pub.send()
    await waitFor(() => pub.acked.size === 20, 'the first events to be acknowledged')

    // The filler eats the space down to half the reserve while events keep coming.
    pub.setPhase('filling')
    const load = pub.keepSending(3)
    const filler = join(disk.mnt, 'filler')
    await fill(filler, 3 * MiB)
    const refused = await waitFor(async () => {
      const s = await status(home)
      return s.json.disk?.state === 'refusing' ? s : undefined
    }, 'svc hub status to say the hub refuses')
    load.stop()
    pub.setPhase('refusing')
    t.match(refused.text, /^disk +REFUSING new work since .*reserve 6\.0 MiB/m, 'svc hub status says so')
    t.equal(refused.json.disk?.path?.startsWith(disk.mnt), true, 'naming the path on the small disk')
    t.ok((refused.json.disk?.free_bytes ?? Infinity) < 6 * MiB, 'with its free space below the reserve')
    await waitFor(() => hubState?.disk?.state === 'refusing', 'svc/hub/state to say the hub refuses')

    // Events sent now wait, unacknowledged, until there is room.
    const held = Array.from({ length: 30 }, () => pub.send())
    // Until the hub says it holds one of them (or, wrongly, one is acknowledged).
    await waitFor(
      async () =>
        held.some((n) => pub.acked.has(n)) || ((await status(home)).json.disk?.held_events ?? 0) > 0,
      'the hub to hold an event',
    )
    t.same(
      held.filter((n) => pub.acked.has(n)),
      [],
      'no event sent while the hub refuses is acknowledged',
    )

    await rm(filler)
    pub.setPhase('freed')
    const resumed = await waitFor(async () => {
      const s = await status(home)
      return s.json.disk?.state === 'ok' ? s : undefined
    }, 'the hub to take work again')
    const got = await waitForCount(() => [...pub.sent].filter((n) => pub.acked.has(n)).length, pub.sent.size)
    t.equal(got, pub.sent.size, 'every event sent is acknowledged once there is room')
    t.same(
      [...pub.acked].filter(([, phase]) => phase === 'refusing'),
      [],
      'none was acknowledged while the hub refused',
    )
    const after = Array.from({ length: 10 }, () => pub.send())
    await waitFor(() => after.every((n) => pub.acked.has(n)), 'new events to be acknowledged, no restart')
    await checkRuns(t, home, pub.acked.keys(), {
      from: Date.parse(refused.json.disk?.since ?? ''),
      to: Date.parse(resumed.json.disk?.since ?? ''),
    })
    await waitFor(() => hubState?.disk?.state === 'ok', 'svc/hub/state to say the disk is ok again')

    t.equal(logLines(hub, 'disk: refusing new work').length, 1, 'one warning when it started refusing')
    t.equal(logLines(hub, 'disk: taking new work again').length, 1, 'one line when it resumed')
    t.same(logLines(hub, 'engine refused the trigger'), [], 'no error line per event')
    t.equal(hub.proc.exitCode, null, 'the hub ran throughout')
  },
)

t.test(
  'the disk fills faster than the watcher (reserve 0): a write fails, one line, recovered',
  {
    skip: mountProbe,
  },
  async (t) => {
    const disk = await smallDisk(t, 32)
    if ('error' in disk) throw new Error(disk.error)
    const home = await tempDir(t)
    const port = await freePort()
    await writeHome(home, join(disk.mnt, 'data'), `port = ${port}`, 0)
    const hub = await startHubChild(t, home)
    const url = `mqtt://127.0.0.1:${port}`
    const client = await mqtt.connectAsync(url, {
      protocolVersion: 4,
      clientId: 'pub-fast',
      reconnectPeriod: 200,
    })
    t.teardown(() => client.endAsync(true))
    const pub = publisher(client)
    for (let i = 0; i < 20; i++) pub.send()
    await waitFor(() => pub.acked.size === 20, 'the first events to be acknowledged')

    // Every byte taken at once, while events keep coming: the hub's next write fails.
    pub.setPhase('full')
    const load = pub.keepSending(2)
    const filler = join(disk.mnt, 'filler')
    await fill(filler, 0)
    const refused = await waitFor(
      async () => {
        const s = await status(home)
        return s.json.disk?.state === 'refusing' ? s : undefined
      },
      'the hub to refuse after a write failed',
      { timeoutMs: 60_000 },
    )
    load.stop()
    t.match(refused.json.disk?.reason ?? '', /could not write/, 'because a store could not write')
    t.ok((refused.json.disk?.stores_failed ?? []).length > 0, 'and names the store to reopen')
    // A few more events, refused while full.
    for (let i = 0; i < 20; i++) pub.send()

    await rm(filler)
    const resumed = await waitFor(
      async () => {
        const s = await status(home)
        return s.json.disk?.state === 'ok' ? s : undefined
      },
      'the hub to reopen its stores and take work again',
      { timeoutMs: 60_000 },
    )
    t.equal(resumed.json.disk?.stores_failed, undefined, 'every store open again')
    const got = await waitForCount(() => [...pub.sent].filter((n) => pub.acked.has(n)).length, pub.sent.size)
    t.equal(got, pub.sent.size, 'every event sent is acknowledged once there is room')
    const after = Array.from({ length: 10 }, () => pub.send())
    await waitFor(() => after.every((n) => pub.acked.has(n)), 'new events to be acknowledged, no restart')
    await checkRuns(t, home, pub.acked.keys(), {
      from: Date.parse(refused.json.disk?.since ?? ''),
      to: Date.parse(resumed.json.disk?.since ?? ''),
    })

    t.equal(logLines(hub, 'disk: refusing new work').length, 1, 'one warning for the failed write')
    t.same(logLines(hub, 'engine refused the trigger'), [], 'no error line per event')
    const noSpace = hub
      .out()
      .split('\n')
      .filter((l) => /No space left|IO error/.test(l))
    t.ok(noSpace.length <= 5, `the disk error is logged a few times, not per event (${noSpace.length} lines)`)
    t.equal(hub.proc.exitCode, null, 'the hub ran throughout')
  },
)

t.test(
  'external Mosquitto, MQTT 5 and 3.1.1 publishers: the hub stops reading, then runs every event',
  {
    skip: mountProbe || noMosquitto,
  },
  async (t) => {
    const disk = await smallDisk(t, 32)
    if ('error' in disk) throw new Error(disk.error)
    const mosq = await startMosquitto(t)
    const home = await tempDir(t)
    await writeHome(home, join(disk.mnt, 'data'), `url = "${mosq.url}"`, 6)
    const hub = await startHubChild(t, home)
    const v5 = await mqtt.connectAsync(mosq.url, {
      protocolVersion: 5,
      clientId: 'pub-5',
      reconnectPeriod: 200,
    })
    const v4 = await mqtt.connectAsync(mosq.url, {
      protocolVersion: 4,
      clientId: 'pub-311',
      reconnectPeriod: 200,
    })
    t.teardown(() => Promise.all([v5.endAsync(true), v4.endAsync(true)]))
    // Sequence numbers apart, one set per publisher.
    const p5 = publisher(v5)
    const p4 = publisher(v4)
    let next5 = 100_000
    const send5 = () => p5.send(++next5)
    for (let i = 0; i < 10; i++) {
      send5()
      p4.send()
    }
    await waitFor(() => p5.acked.size === 10 && p4.acked.size === 10, 'the first events to be acknowledged')
    await waitFor(async () => (await runs(home)).length >= 20, 'their runs')

    const filler = join(disk.mnt, 'filler')
    await fill(filler, 3 * MiB)
    const refused = await waitFor(async () => {
      const s = await status(home)
      return s.json.disk?.state === 'refusing' ? s : undefined
    }, 'the hub to refuse')
    for (let i = 0; i < 30; i++) {
      send5()
      p4.send()
    }
    // Mosquitto takes them (its PUBACK: they wait in its queue for the hub's session).
    await waitFor(() => p5.acked.size === 40 && p4.acked.size === 40, 'Mosquitto to acknowledge them')
    t.equal((await status(home)).json.disk?.state, 'refusing', 'the hub still refuses')

    await rm(filler)
    const resumed = await waitFor(async () => {
      const s = await status(home)
      return s.json.disk?.state === 'ok' ? s : undefined
    }, 'the hub to take work again')
    await checkRuns(t, home, [...p5.acked.keys(), ...p4.acked.keys()], {
      from: Date.parse(refused.json.disk?.since ?? ''),
      to: Date.parse(resumed.json.disk?.since ?? ''),
    })
    t.equal(logLines(hub, 'disk: refusing new work').length, 1, 'one warning')
    t.equal(hub.proc.exitCode, null, 'the hub ran throughout')
  },
)
