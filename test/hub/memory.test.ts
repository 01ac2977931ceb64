// What the hub keeps resident (hub/DESIGN.md, "Keeping idle memory down"): checks on the parts that decide it, not wall-clock or
// RSS figures (bench/hub.bench.ts measures those).
import t from 'tap'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import mqtt from 'mqtt'
import { parseConfig } from '../../hub/daemon/config.ts'
import { startHub } from '../../hub/daemon/hub.ts'
import { silentLog } from '../../hub/log.ts'
import { tempDir } from '../helpers/tmp.ts'

// mqtt-packet is the packet writer of both mqtt.js and Aedes (one copy in node_modules).
const require = createRequire(import.meta.url)
const numbers = require('mqtt-packet/numbers.js') as { cache: Record<number, Buffer> }

t.test(
  'packets flow both ways through the embedded broker without mqtt-packet building its 64K number cache',
  async (t) => {
    const home = await tempDir(t)
    const cfg = parseConfig(
      `[hub]\ndata_dir = "${join(home, 'data')}"\nsops_dir = "${join(home, 'sops')}"\n[broker]\nport = 0\n[webhook]\nenabled = false\n`,
      join(home, 'hub.toml'),
      { SVC_HOME: home },
    )
    if (!cfg.ok) throw new Error(cfg.error)
    const hub = await startHub(cfg.config, silentLog)
    t.teardown(() => hub.close())
    const client = await mqtt.connectAsync(hub.brokerUrl, { reconnectPeriod: 0 })
    t.teardown(() => client.endAsync(true))
    await client.subscribeAsync('mem/#', { qos: 1 })
    const got = new Promise<string>((resolve) => client.once('message', (_topic, p) => resolve(p.toString())))
    // The hub's own session publishes (QoS 1: a packet id is written); Aedes forwards it to the client.
    await hub.mqtt.publishAsync('mem/x', 'hello', { qos: 1 })
    t.equal(await got, 'hello')
    t.equal(Object.keys(numbers.cache).length, 0, 'no cache of 65,536 Buffers (6.3 MB of heap)')
  },
)
