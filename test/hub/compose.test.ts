// Composition details: an external broker by URL replaces the embedded one; SOP reload; a
// start that fails part-way closes what it opened.
import t from 'tap'
import { join } from 'node:path'
import { mkdir, writeFile } from 'node:fs/promises'
import mqtt from 'mqtt'
import { startBroker } from '../../hub/broker/broker.ts'
import { parseConfig } from '../../hub/daemon/config.ts'
import { startHub } from '../../hub/daemon/hub.ts'
import { silentLog } from '../../hub/log.ts'
import { freePort } from '../helpers/ports.ts'
import { tempDir } from '../helpers/tmp.ts'
import { waitFor } from '../helpers/wait.ts'
import { startEmbeddedBroker } from './embedded-broker.ts'

const sopToml = (name: string, topic: string): string =>
  `[sop]\nname = "${name}"\ndescription = "d"\nexecution_mode = "deterministic"\nmax_concurrent = 8\nagent = "a"\n\n[[triggers]]\ntype = "mqtt"\ntopic = "${topic}"\n`
const SOP_MD = '# s\n\n## Steps\n\n1. **Pause**\n   - call: {"tool":"wait","args":{"ms":1}}\n'

async function writeSop(dir: string, name: string, topic: string): Promise<void> {
  await mkdir(join(dir, name), { recursive: true })
  await writeFile(join(dir, name, 'SOP.toml'), sopToml(name, topic))
  await writeFile(join(dir, name, 'SOP.md'), SOP_MD)
}

t.test(
  'broker.url: the hub uses the external broker and starts none of its own; reload swaps SOPs',
  async (t) => {
    const home = await tempDir(t)
    const external = await startEmbeddedBroker(t, { dbPath: join(home, 'external') })
    const sopsDir = join(home, 'sops')
    await writeSop(sopsDir, 'a', 'plant/+/alarm')
    const cfg = parseConfig(
      `[hub]\nsops_dir = "${sopsDir}"\ndata_dir = "${join(home, 'data')}"\n[broker]\nurl = "${external.url}"\n[webhook]\nenabled = false\n`,
      null,
      { SVC_HOME: home },
    )
    if (!cfg.ok) throw new Error(cfg.error)
    const hub = await startHub(cfg.config, silentLog)
    t.teardown(() => hub.close())
    t.equal(hub.broker, null)
    t.equal(hub.brokerUrl, external.url)
    const pub = await mqtt.connectAsync(external.url, { reconnectPeriod: 0 })
    t.teardown(() => pub.endAsync(true))
    await pub.publishAsync('plant/p1/alarm', 'on', { qos: 1 })
    await waitFor(async () => (await hub.engine.listRuns({ sop: 'a' })).length === 1, 'a run of a')

    await writeSop(sopsDir, 'b', 'plant/+/door')
    await hub.reload()
    t.same(hub.sops.map((s) => s.name).sort(), ['a', 'b'])
    await pub.publishAsync('plant/p1/door', 'open', { qos: 1 })
    await waitFor(
      async () => (await hub.engine.listRuns({ sop: 'b' })).length === 1,
      'a run of b, added by the reload',
    )
  },
)

t.test('a start that fails part-way (webhook port taken) closes the broker it opened', async (t) => {
  const home = await tempDir(t)
  const blocker = await startEmbeddedBroker(t, { dbPath: join(home, 'blocker') })
  const brokerPort = await freePort()
  const cfg = parseConfig(
    `[hub]\nsops_dir = "${join(home, 'sops')}"\ndata_dir = "${join(home, 'data')}"\n[broker]\nport = ${brokerPort}\n[webhook]\nport = ${blocker.port}\n`,
    null,
    { SVC_HOME: home },
  )
  if (!cfg.ok) throw new Error(cfg.error)
  await t.rejects(startHub(cfg.config, silentLog), /EADDRINUSE/)
  // The embedded broker's port is free again, and its database can be reopened.
  const again = await startBroker({
    host: '127.0.0.1',
    port: brokerPort,
    wsPort: null,
    dbPath: join(home, 'data', 'broker'),
    log: silentLog,
  })
  await again.close()
  t.pass('port and database released')
})

t.test(
  'an external broker that restarts without the session: the hub reconnects and resubscribes',
  async (t) => {
    const home = await tempDir(t)
    const port = await freePort()
    let external = await startBroker({
      host: '127.0.0.1',
      port,
      wsPort: null,
      dbPath: join(home, 'ext1'),
      log: silentLog,
    })
    t.teardown(() => external.close())
    const sopsDir = join(home, 'sops')
    await writeSop(sopsDir, 'a', 'plant/+/alarm')
    const cfg = parseConfig(
      `[hub]\nsops_dir = "${sopsDir}"\ndata_dir = "${join(home, 'data')}"\n[broker]\nurl = "mqtt://127.0.0.1:${port}"\n[webhook]\nenabled = false\n`,
      null,
      { SVC_HOME: home },
    )
    if (!cfg.ok) throw new Error(cfg.error)
    const hub = await startHub(cfg.config, silentLog)
    t.teardown(() => hub.close())

    await external.close()
    external = await startBroker({
      host: '127.0.0.1',
      port,
      wsPort: null,
      dbPath: join(home, 'ext2'),
      log: silentLog,
    })
    await waitFor(() => hub.mqtt.connected, 'the hub to reconnect to the restarted broker')
    const pub = await mqtt.connectAsync(external.url, { reconnectPeriod: 0 })
    t.teardown(() => pub.endAsync(true))
    // Resubscription races the first publish: publish until the run appears.
    await waitFor(
      async () => {
        await pub.publishAsync('plant/p1/alarm', 'on', { qos: 1 })
        return (await hub.engine.listRuns({ sop: 'a' })).length > 0
      },
      'a run through the new broker',
      { intervalMs: 20 },
    )
    t.pass('a run started through the new broker')
  },
)

t.test('an unreachable external broker is a start error that names it', async (t) => {
  const home = await tempDir(t)
  const port = await freePort()
  const cfg = parseConfig(
    `[hub]\nsops_dir = "${join(home, 'sops')}"\ndata_dir = "${join(home, 'data')}"\n[broker]\nurl = "mqtt://127.0.0.1:${port}"\n`,
    null,
    { SVC_HOME: home },
  )
  if (!cfg.ok) throw new Error(cfg.error)
  await t.rejects(
    startHub(cfg.config, silentLog),
    new RegExp(`cannot connect to the MQTT broker at mqtt://127.0.0.1:${port}: .*ECONNREFUSED`),
  )
})

t.test(
  'the sop_* tools are registered in the hub: a step starts another SOP with sop_execute and reads it with sop_status',
  async (t) => {
    const home = await tempDir(t)
    const sopsDir = join(home, 'sops')
    await writeSop(sopsDir, 'child', 'never/+/fires')
    await mkdir(join(sopsDir, 'parent'), { recursive: true })
    await writeFile(join(sopsDir, 'parent', 'SOP.toml'), sopToml('parent', 'plant/+/start'))
    await writeFile(
      join(sopsDir, 'parent', 'SOP.md'),
      '# p\n\n## Steps\n\n1. **Start the child**\n   - call: {"tool":"sop_execute","args":{"sop":"child","payload":{"from":"parent"}}}\n' +
        '2. **Look at it**\n   - call: {"tool":"sop_status","args":{"run_id":"{{steps.1.run_id}}"}}\n',
    )
    const cfg = parseConfig(
      `[hub]\nsops_dir = "${sopsDir}"\ndata_dir = "${join(home, 'data')}"\n[broker]\nport = 0\n[webhook]\nenabled = false\n`,
      null,
      { SVC_HOME: home },
    )
    if (!cfg.ok) throw new Error(cfg.error)
    const hub = await startHub(cfg.config, silentLog)
    t.teardown(() => hub.close())
    t.ok(hub.tools.has('sop_execute') && hub.tools.has('sop_status') && hub.tools.has('sop_approve'))
    const d = await hub.engine.trigger('parent', {
      type: 'manual',
      source: 'test',
      payload: {},
      at: Date.now(),
    })
    t.equal(d.outcome, 'started')
    const parent = await waitFor(async () => {
      const r = await hub.engine.getRun(d.runId!)
      return r && (r.state === 'completed' || r.state === 'failed') ? r : undefined
    }, 'the parent run to finish')
    t.equal(parent.state, 'completed', parent.error ?? '')
    const children = await hub.engine.listRuns({ sop: 'child' })
    t.equal(children.length, 1)
    t.equal((parent.steps['1']?.output as { run_id?: string } | undefined)?.run_id, children[0]!.id)
  },
)
