// No acknowledged event lost on kill -9 (hub/DESIGN.md, "What survives a crash"): `svc hub` as a
// child process, SIGKILLed (by pid) in the middle of bursts of QoS 1 events, then started again
// on the same folder, over and over. The SOP answers each event `in/<n>` with a QoS 1 publish on
// `out/<n>`. At the end, from the hub's own run records:
//   - every event the broker acknowledged to the publisher has its run, completed;
//   - no event has two runs (a copy the broker sent again after the kill is recognised);
//   - an output seen twice belongs to a run the restart resumed mid-step (the documented repeat).
// Embedded broker (it dies with the hub: the publisher's unacknowledged events are not counted),
// and an external Mosquitto (it lives on and keeps the hub's session).
import { readFile, writeFile, mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import mqtt, { type MqttClient } from 'mqtt'
import t, { type Test } from 'tap'
import { EngineStore } from '../../hub/engine/store.ts'
import type { RunRecord } from '../../sops/run/record.ts'
import { noMosquitto, startMosquitto } from '../helpers/mosquitto.ts'
import { killHub, startHubChild } from '../helpers/hub-process.ts'
import { freePort } from '../helpers/ports.ts'
import { tempDir } from '../helpers/tmp.ts'
import { waitFor } from '../helpers/wait.ts'

/** Kills per broker: 10 embedded + 10 Mosquitto = 20. */
const KILLS = 10
const BURST = 300

const SOP_TOML = `[sop]
name = "answer"
description = "in/<n> answered on out/<n>"
execution_mode = "auto"
max_concurrent = 100000
agent = "none"

[[triggers]]
type = "mqtt"
topic = "in/+"
condition = "$.v >= 10"
`
const SOP_MD = `# answer

## Steps

1. **Answer**
   - call: {"tool":"mqtt_publish","args":{"topic":"out/{{trigger.seq}}","payload":"{{trigger}}","qos":1}}
   - terminal: true
`

async function writeHome(home: string, broker: string): Promise<void> {
  await mkdir(join(home, 'sops', 'answer'), { recursive: true })
  await writeFile(join(home, 'sops', 'answer', 'SOP.toml'), SOP_TOML)
  await writeFile(join(home, 'sops', 'answer', 'SOP.md'), SOP_MD)
  await writeFile(
    join(home, 'hub.toml'),
    `[hub]\nsops_dir = "${join(home, 'sops')}"\nlog_level = "warn"\n[broker]\n${broker}\n[webhook]\nenabled = false\n[api]\nport = 0\n[console]\nport = 0\n`,
  )
}

/** The runs the hub recorded, read from its store once it is stopped: runs per event seq. */
async function runsBySeq(home: string): Promise<Map<number, RunRecord[]>> {
  const store = await EngineStore.open(join(home, 'data', 'engine'))
  try {
    const out = new Map<number, RunRecord[]>()
    const ids: string[] = []
    for await (const s of store.finished()) ids.push((s as { id: string }).id)
    for (const r of await store.unfinished()) ids.push(r.id)
    for (const id of ids) {
      const run = await store.getRun(id)
      if (!run) continue
      const seq = (JSON.parse(String(run.trigger.payload)) as { seq: number }).seq
      out.set(seq, [...(out.get(seq) ?? []), run])
    }
    return out
  } finally {
    await store.close()
  }
}

/** Publishes `count` events from `first` at once; resolves to the seqs the broker acknowledged. */
function burst(pub: MqttClient, first: number, count: number, acked: Set<number>): Promise<unknown> {
  const all: Promise<unknown>[] = []
  for (let n = first; n < first + count; n++)
    all.push(
      pub
        .publishAsync(`in/${n}`, `{"seq":${n},"v":${10 + (n % 5)}}`, { qos: 1 })
        .then(() => acked.add(n))
        .catch(() => undefined),
    )
  return Promise.allSettled(all)
}

async function crashLoop(
  t: Test,
  variant: { home: string; brokerUrl: () => string; embedded: boolean },
): Promise<void> {
  const { home } = variant
  const acked = new Set<number>()
  const outputs = new Map<number, number>()
  let first = 1
  let hub = await startHubChild(t, home)
  // The outputs: a persistent session, so answers published while it reconnects are kept for it.
  const sub = await mqtt.connectAsync(variant.brokerUrl(), {
    clientId: 'crash-outputs',
    clean: false,
    reconnectPeriod: 100,
  })
  t.teardown(() => sub.endAsync(true))
  sub.on('message', (topic, _p, packet) => {
    // A copy the broker sends the subscriber again (DUP, Mosquitto) is QoS 1 delivery, not a repeat by the hub.
    if (packet.retain || packet.dup || !topic.startsWith('out/')) return
    const n = Number(topic.slice(4))
    outputs.set(n, (outputs.get(n) ?? 0) + 1)
  })
  await sub.subscribeAsync('out/+', { qos: 1 })

  for (let k = 0; k < KILLS; k++) {
    const pub = await mqtt.connectAsync(variant.brokerUrl(), { reconnectPeriod: 0 })
    pub.on('error', () => undefined)
    const before = outputs.size
    // Kill once the hub has answered a part of the burst: a different part each time.
    const killAfter = 5 + ((k * 37) % 120)
    const sent = burst(pub, first, BURST, acked)
    await waitFor(
      () => outputs.size - before >= killAfter || hub.proc.exitCode !== null,
      'the hub to answer part of the burst',
      { timeoutMs: 60_000 },
    )
    await killHub(hub)
    if (variant.embedded) {
      pub.stream.destroy()
      // mqtt.js settles the QoS 1 publishes still unacknowledged only at end(), as failed: before
      // it, `sent` would wait for them forever. (With Mosquitto they are acknowledged: it lives on.)
      await pub.endAsync(true)
    }
    await sent
    if (!variant.embedded) await pub.endAsync(true)
    first += BURST
    hub = await startHubChild(t, home)
  }
  const ackedList = [...acked]
  t.ok(ackedList.length > KILLS * 5, `${ackedList.length} events acknowledged by the broker`)
  await waitFor(() => ackedList.every((n) => outputs.has(n)), 'an answer to every acknowledged event', {
    timeoutMs: 120_000,
  }).catch(() => undefined) // the run records below say which one is missing
  const stopped = hub.exited
  process.kill(hub.proc.pid as number, 'SIGTERM')
  await stopped

  const runs = await runsBySeq(home)
  const lost = ackedList.filter((n) => !runs.has(n))
  t.same(lost, [], 'every acknowledged event has its run')
  const twice = [...runs].filter(([, rs]) => rs.length > 1).map(([n]) => n)
  t.same(twice, [], 'no event has two runs')
  const unfinished = [...runs].filter(([, rs]) => rs.some((r) => r.state !== 'completed')).map(([n]) => n)
  t.same(unfinished, [], 'every run completed')
  const unanswered = ackedList.filter((n) => !outputs.has(n))
  t.same(unanswered, [], 'every acknowledged event was answered')
  // The one repeat the README allows: the step that was mid-call at a kill, once per kill that
  // caught it. Aedes sends a reconnected subscriber its unacknowledged messages again without
  // DUP, so on the embedded broker a repeat seen here may be the broker's: counted, not judged.
  const resumed = (n: number): number =>
    runs.get(n)?.[0]?.log.filter((l) => l.msg.startsWith('hub restarted mid-run')).length ?? 0
  let repeats = 0
  for (const [n, count] of outputs) {
    if (count < 2) continue
    repeats++
    if (!variant.embedded)
      t.ok(
        count - 1 <= resumed(n),
        `out/${n} published ${count} times: its run was resumed mid-step ${resumed(n)} times`,
      )
  }
  const resumedRuns = [...runs.keys()].filter((n) => resumed(n) > 0).length
  t.comment(
    `${KILLS} kills, ${ackedList.length} acknowledged events, ${runs.size} with runs, ${resumedRuns} runs resumed mid-step, ${repeats} outputs seen twice`,
  )
}

t.test('embedded broker: SIGKILL during bursts loses no acknowledged event', async (t) => {
  const home = await tempDir(t, 'svc-event-crash-')
  const port = await freePort()
  await writeHome(home, `port = ${port}`)
  await crashLoop(t, { home, brokerUrl: () => `mqtt://127.0.0.1:${port}`, embedded: true })
})

t.test(
  'external Mosquitto: SIGKILL during bursts loses no acknowledged event',
  noMosquitto ? { skip: noMosquitto } : {},
  async (t) => {
    const home = await tempDir(t, 'svc-event-crash-')
    const broker = await startMosquitto(t)
    await writeHome(home, `url = "${broker.url}"`)
    await crashLoop(t, { home, brokerUrl: () => broker.url, embedded: false })
    t.notMatch(await readFile(join(home, 'hub.toml'), 'utf8'), /password/)
  },
)
