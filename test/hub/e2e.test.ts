// End to end, all real: a simulated board on the serialport mock binding → the bridge → the
// embedded Aedes broker on loopback → the peripheral trigger → the SOP engine on LevelDB →
// tools (board_send back to the board, mqtt_publish) → the run completed.
import t from 'tap'
import { join } from 'node:path'
import { mkdir, writeFile } from 'node:fs/promises'
import mqtt from 'mqtt'
import { createSimulatingBridge } from '../../boards/simulator/bridge.ts'
import type { SimulatedBoard } from '../../boards/simulator/board.ts'
import { parseConfig } from '../../hub/daemon/config.ts'
import { startHub } from '../../hub/daemon/hub.ts'
import type { HubParts } from '../../hub/daemon/parts.ts'
import { silentLog } from '../../hub/log.ts'
import { tempDir } from '../helpers/tmp.ts'
import { waitFor } from '../helpers/wait.ts'

const VEND_TOML = `[sop]
name = "vend"
description = "Dispense when a coin arrives"
execution_mode = "deterministic"
admission_policy = "parallel"
max_concurrent = 4
agent = "vending"

[[triggers]]
type = "peripheral"
board = "vend1"
signal = "coin"
condition = "$.amount >= 2"
`
const VEND_MD = `# Vend

## Steps

1. **Read the slot sensor**
   - call: {"tool":"board_send","args":{"board":"vend1","cmd":"gpio_read","args":{"pin":7}}}
2. **Announce**
   - call: {"tool":"mqtt_publish","args":{"topic":"vend/done","payload":"{{steps.1}}"}}
   - terminal: true
`

async function writeSop(dir: string, name: string, toml: string, md: string): Promise<void> {
  await mkdir(join(dir, name), { recursive: true })
  await writeFile(join(dir, name, 'SOP.toml'), toml)
  await writeFile(join(dir, name, 'SOP.md'), md)
}

t.test('a board event starts a SOP run that completes', async (t) => {
  const home = await tempDir(t)
  const sopsDir = join(home, 'sops')
  await writeSop(sopsDir, 'vend', VEND_TOML, VEND_MD)
  // A SOP that fails to load is logged and skipped; the rest run.
  await writeSop(sopsDir, 'broken', '[sop]\nname = "broken"\n', 'no steps here')
  const cfg = parseConfig(
    `[hub]\nsops_dir = "${sopsDir}"\ndata_dir = "${join(home, 'data')}"\n[broker]\nport = 0\n[webhook]\nport = 0\n[[boards]]\nname = "vend1"\nport = "/dev/sim-vend1"\nsimulate = true\nheartbeat_ms = 0\n`,
    join(home, 'hub.toml'),
    { SVC_HOME: home },
  )
  if (!cfg.ok) throw new Error(cfg.error)
  let bridge: ReturnType<typeof createSimulatingBridge> | undefined
  const parts: HubParts = {
    createBridge: (o) => {
      bridge = createSimulatingBridge({
        ...o,
        boards: o.boards.map((b) => ({ ...b, simulate: { rate: 0 } })),
      })
      return bridge
    },
  }
  const hub = await startHub(cfg.config, silentLog, parts)
  t.teardown(() => hub.close())
  t.same(
    hub.sops.map((s) => s.name),
    ['vend'],
  )
  t.ok(
    hub.diagnostics.some((d) => d.severity === 'error' && d.file.includes('broken')),
    'the broken SOP is reported with its file',
  )

  const watcher = await mqtt.connectAsync(hub.brokerUrl, { reconnectPeriod: 0 })
  t.teardown(() => watcher.endAsync(true))
  await watcher.subscribeAsync('vend/done', { qos: 1 })
  const announced = new Promise<string>((resolve) =>
    watcher.once('message', (_t, p) => resolve(p.toString())),
  )

  const sim = bridge?.simulated('vend1') as SimulatedBoard
  t.ok(sim, 'the simulated board is attached')
  // Wait for the board's hello to reach the bridge (it says online), then send two coins:
  // amount 2 matches the condition, amount 1 does not (vendingCoin alternates 2, 1).
  await waitFor(() => bridge!.stats().boards.vend1?.state === 'online', 'the simulated board to be online')
  sim.emitEvents(2)

  const runs = await waitFor(async () => {
    const list = await hub.engine.listRuns({ sop: 'vend' })
    return list.length === 1 && list[0]?.state === 'completed' ? list : undefined
  }, 'one completed vend run')
  const run = await hub.engine.getRun(runs[0]!.id)
  t.equal(run?.state, 'completed')
  t.match(JSON.stringify(run), /"peripheral"/)
  t.match(JSON.stringify(run), /boards\/vend1\/coin/)
  // mqtt_publish sends a JSON value as its JSON text: the board's answer to gpio_read.
  t.same(
    JSON.parse(await announced),
    { pin: 7, value: 0 },
    'the second step published what the board answered',
  )
  await hub.engine.idle()
  t.equal(
    (await hub.engine.listRuns({ sop: 'vend' })).length,
    1,
    'the amount-1 coin did not match the condition',
  )
})
