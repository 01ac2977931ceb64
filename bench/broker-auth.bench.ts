// What an account costs at connect: the embedded broker (hub/broker/broker.ts) taking a client
// with a user name and password (scrypt ln=14, r=8, p=1: hub/broker/password.ts) beside the same
// broker taking an anonymous loopback client (the baseline), in one process, rounds alternating.
// Also what the ACL costs a publish: QoS 1 round trips from a `board` account on its own topic
// beside an anonymous client on the same broker. Prints p50/p99 per variant and the ratios.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import mqtt from 'mqtt'
import { writeAccountsFile } from '../hub/broker/accounts-file.ts'
import { startBroker } from '../hub/broker/broker.ts'
import { hashPassword } from '../hub/broker/password.ts'
import { silentLog } from '../hub/log.ts'

const CONNECTS = 40
const PUBLISHES = 2000
const ROUNDS = 3
const PASSWORD = 'bench password 1'

const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] as number
}

async function connects(url: string, opts: mqtt.IClientOptions): Promise<number[]> {
  const lat: number[] = []
  for (let i = 0; i < CONNECTS; i++) {
    const t0 = performance.now()
    const c = await mqtt.connectAsync(url, { reconnectPeriod: 0, ...opts })
    lat.push(performance.now() - t0)
    await c.endAsync(true)
  }
  return lat
}

async function publishes(url: string, opts: mqtt.IClientOptions, topic: string): Promise<number[]> {
  const c = await mqtt.connectAsync(url, { reconnectPeriod: 0, ...opts })
  const lat: number[] = []
  for (let i = 0; i < PUBLISHES; i++) {
    const t0 = performance.now()
    await c.publishAsync(topic, String(i), { qos: 1 })
    lat.push(performance.now() - t0)
  }
  await c.endAsync(true)
  return lat
}

const dir = await mkdtemp(join(tmpdir(), 'svc-bench-auth-'))
try {
  const accountsFile = join(dir, 'broker-accounts')
  await writeAccountsFile(accountsFile, [
    { name: 'esp1', role: 'board', board: 'esp1', hash: await hashPassword(PASSWORD) },
  ])
  const broker = await startBroker({
    host: '127.0.0.1',
    port: 0,
    wsPort: null,
    dbPath: join(dir, 'broker'),
    log: silentLog,
    accountsFile,
  })
  const account = { username: 'esp1', password: PASSWORD }
  await connects(broker.url, {}) // warm-up
  await connects(broker.url, account)
  const got = { anon: [] as number[], acct: [] as number[], pubAnon: [] as number[], pubAcct: [] as number[] }
  for (let r = 0; r < ROUNDS; r++) {
    got.anon.push(...(await connects(broker.url, {})))
    got.acct.push(...(await connects(broker.url, account)))
    got.pubAnon.push(...(await publishes(broker.url, {}, 'boards/esp1/t')))
    got.pubAcct.push(...(await publishes(broker.url, account, 'boards/esp1/t')))
  }
  await broker.close()
  const line = (what: string, base: number[], v: number[]): void => {
    const [b50, b99, v50, v99] = [pct(base, 50), pct(base, 99), pct(v, 50), pct(v, 99)]
    console.log(
      `${what}: baseline p50 ${b50.toFixed(2)} ms p99 ${b99.toFixed(2)} ms; ` +
        `with auth p50 ${v50.toFixed(2)} ms p99 ${v99.toFixed(2)} ms (p50 ${(v50 / b50).toFixed(1)}x)`,
    )
  }
  line(`connect, anonymous (baseline) vs account, ${ROUNDS}x${CONNECTS}`, got.anon, got.acct)
  line(
    `QoS 1 publish round trip, anonymous (baseline) vs board account, ${ROUNDS}x${PUBLISHES}`,
    got.pubAnon,
    got.pubAcct,
  )
} finally {
  await rm(dir, { recursive: true, force: true })
}
