// A hub that dies leaves no board `online`: `svc hub` as a child process, SIGKILLed (by pid).
// - External broker (a real Mosquitto): each board's availability travels on a session whose
//   will is `offline`, so the broker itself marks every board offline when the hub is gone.
// - Embedded broker: it dies with the hub, and its retained store keeps the last `online`; the
//   next start resets every owned board to `offline` before any port opens.
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import mqtt from 'mqtt'
import t from 'tap'
import { noMosquitto, startMosquitto } from '../helpers/mosquitto.ts'
import { freePort } from '../helpers/ports.ts'
import { startHubChild } from '../helpers/hub-process.ts'
import { type Teardown, tempDir } from '../helpers/tmp.ts'
import { waitFor } from '../helpers/wait.ts'

/** Availability messages on `boards/+/availability`, as `board payload`. */
async function watchAvailability(t: Teardown, url: string) {
  const c = await mqtt.connectAsync(url, { reconnectPeriod: 0 })
  t.teardown(() => c.endAsync(true))
  const got: { board: string; state: string; retain: boolean }[] = []
  c.on('message', (topic, p, packet) =>
    got.push({ board: topic.split('/')[1]!, state: p.toString(), retain: packet.retain }),
  )
  await c.subscribeAsync('boards/+/availability', { qos: 1 })
  const last = (board: string) => got.filter((g) => g.board === board).at(-1)?.state
  return { got, last }
}

const simulated = (name: string) =>
  `[[boards]]\nname = "${name}"\nport = "/sim/${name}"\nsimulate = true\nheartbeat_ms = 0\n`

t.test(
  'external broker: SIGKILL the hub, every board it owned ends offline',
  { skip: noMosquitto },
  async (t) => {
    const mosq = await startMosquitto(t)
    const home = await tempDir(t, 'svc-hub-home-')
    await writeFile(
      join(home, 'hub.toml'),
      `[broker]\nurl = "${mosq.url}"\nclient_id = "svc-test-${process.pid}-${Date.now()}"\n[webhook]\nenabled = false\n[api]\nport = 0\n[console]\nport = 0\n${simulated('vend1')}${simulated('vend2')}`,
    )
    const watch = await watchAvailability(t, mosq.url)
    const hub = await startHubChild(t, home)
    await waitFor(
      () => watch.last('vend1') === 'online' && watch.last('vend2') === 'online',
      'both boards online',
    )
    process.kill(hub.pid, 'SIGKILL')
    t.equal(await hub.exited, 'SIGKILL')
    await waitFor(
      () => watch.last('vend1') === 'offline' && watch.last('vend2') === 'offline',
      'the broker to publish both wills',
    )
    // Someone arriving afterwards reads the truth from the retained messages.
    const late = await watchAvailability(t, mosq.url)
    await waitFor(() => late.got.length === 2, 'two retained availabilities')
    t.same(late.got.map((g) => `${g.board} ${g.state} ${g.retain}`).sort(), [
      'vend1 offline true',
      'vend2 offline true',
    ])
  },
)

t.test('external broker: a clean stop (SIGTERM) also ends offline', { skip: noMosquitto }, async (t) => {
  const mosq = await startMosquitto(t)
  const home = await tempDir(t, 'svc-hub-home-')
  await writeFile(
    join(home, 'hub.toml'),
    `[broker]\nurl = "${mosq.url}"\nclient_id = "svc-test-${process.pid}-${Date.now()}"\n[webhook]\nenabled = false\n[api]\nport = 0\n[console]\nport = 0\n${simulated('vend1')}`,
  )
  const watch = await watchAvailability(t, mosq.url)
  const hub = await startHubChild(t, home)
  await waitFor(() => watch.last('vend1') === 'online', 'vend1 online')
  process.kill(hub.pid, 'SIGTERM')
  await hub.exited
  await waitFor(() => watch.last('vend1') === 'offline', 'offline after the clean stop')
  t.match(hub.out(), /"hub stopped"/)
})

t.test('embedded broker: after a SIGKILL, the next start resets availability to offline', async (t) => {
  const home = await tempDir(t, 'svc-hub-home-')
  const port = await freePort()
  const conf = (boards: string) =>
    writeFile(
      join(home, 'hub.toml'),
      `[broker]\nport = ${port}\n[webhook]\nenabled = false\n[api]\nport = 0\n[console]\nport = 0\n${boards}`,
    )
  await conf(simulated('vend1') + simulated('old1'))
  const url = `mqtt://127.0.0.1:${port}`
  const first = await startHubChild(t, home)
  const watch = await watchAvailability(t, url)
  await waitFor(() => watch.last('vend1') === 'online' && watch.last('old1') === 'online', 'both online')
  process.kill(first.pid, 'SIGKILL')
  t.equal(await first.exited, 'SIGKILL')

  // Started again with the same data (the broker's retained store on disk), the board now on a
  // port where nothing is plugged in, and old1 gone from hub.toml: neither may read `online`
  // from the last run.
  await conf(`[[boards]]\nname = "vend1"\nport = "${join(home, 'no-such-port')}"\nheartbeat_ms = 0\n`)
  await startHubChild(t, home)
  const late = await watchAvailability(t, url)
  await waitFor(() => late.got.length >= 2, 'the retained availabilities')
  t.same(
    late.got.map((g) => `${g.board} ${g.state} ${g.retain}`).sort(),
    ['old1 offline true', 'vend1 offline true'],
    'offline, not the stale online',
  )
})
