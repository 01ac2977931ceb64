// What the broker-auth tests share: an accounts file written by the real code, a log that
// records, the embedded broker with the options under test, and Debian's mosquitto clients run
// as child processes (stopped by pid when the test ends).
import { spawn, spawnSync } from 'node:child_process'
import { join } from 'node:path'
import mqtt from 'mqtt'
import type { Role } from '../../hub/broker/acl.ts'
import { writeAccountsFile } from '../../hub/broker/accounts-file.ts'
import { type BrokerOptions, type EmbeddedBroker, startBroker } from '../../hub/broker/broker.ts'
import { hashPassword } from '../../hub/broker/password.ts'
import type { Log } from '../../hub/log.ts'
import { tempDir, type Teardown } from '../helpers/tmp.ts'

export interface TestAccount {
  name: string
  role: Role
  board?: string
  password: string
}

export async function writeAccounts(file: string, list: readonly TestAccount[]): Promise<void> {
  const accounts = await Promise.all(
    list.map(async (a) => ({
      name: a.name,
      role: a.role,
      board: a.role === 'board' ? (a.board ?? a.name) : null,
      hash: await hashPassword(a.password),
    })),
  )
  await writeAccountsFile(file, accounts)
}

export interface LogLine {
  level: 'info' | 'warn' | 'error'
  obj: Record<string, unknown>
  msg: string
}

export function recordingLog(): Log & { lines: LogLine[] } {
  const lines: LogLine[] = []
  const at =
    (level: LogLine['level']) =>
    (obj: object | string, msg?: string): void => {
      lines.push(
        typeof obj === 'string'
          ? { level, obj: {}, msg: obj }
          : { level, obj: obj as Record<string, unknown>, msg: msg ?? '' },
      )
    }
  return { lines, info: at('info'), warn: at('warn'), error: at('error') }
}

/** The embedded broker on a free port, its database and accounts file in a temp folder. */
export async function brokerFor(
  t: Teardown,
  opts: Partial<BrokerOptions> & { accounts?: readonly TestAccount[] } = {},
): Promise<{
  broker: EmbeddedBroker
  log: ReturnType<typeof recordingLog>
  accountsFile: string
  dir: string
}> {
  const dir = await tempDir(t)
  const accountsFile = join(dir, 'broker-accounts')
  if (opts.accounts) await writeAccounts(accountsFile, opts.accounts)
  const log = recordingLog()
  const { accounts: _a, ...rest } = opts
  const broker = await startBroker({
    host: '127.0.0.1',
    port: 0,
    wsPort: null,
    dbPath: join(dir, 'broker'),
    log,
    accountsFile,
    ...rest,
  })
  t.teardown(() => broker.close())
  return { broker, log, accountsFile, dir }
}

/** An mqtt.js client that must connect; ended when the test ends. */
export async function client(
  t: Teardown,
  url: string,
  opts: mqtt.IClientOptions = {},
): Promise<mqtt.MqttClient> {
  const c = await mqtt.connectAsync(url, { reconnectPeriod: 0, ...opts })
  t.teardown(() => c.endAsync(true))
  return c
}

/** The CONNACK return code a refused connect got (0 when it was accepted, and then closed). */
export async function connectCode(url: string, opts: mqtt.IClientOptions = {}): Promise<number> {
  try {
    const c = await mqtt.connectAsync(url, { reconnectPeriod: 0, connectTimeout: 10_000, ...opts })
    await c.endAsync(true)
    return 0
  } catch (err) {
    const code = (err as { code?: unknown }).code
    if (typeof code === 'number') return code
    throw err
  }
}

/** Every message on `filter`, as `topic payload` strings. */
export async function inbox(c: mqtt.MqttClient, filter: string): Promise<string[]> {
  const got: string[] = []
  c.on('message', (topic, payload) => got.push(`${topic} ${payload.toString()}`))
  await c.subscribeAsync(filter, { qos: 1 })
  return got
}

export const hasMosquittoClients =
  spawnSync('mosquitto_pub', ['--help']).error === undefined &&
  spawnSync('mosquitto_sub', ['--help']).error === undefined

export interface Run {
  code: number | null
  stdout: string
  stderr: string
}

/** Runs a mosquitto client to its end (or kills it, by pid, when the test ends first). */
export function run(t: Teardown, cmd: string, args: readonly string[]): Promise<Run> {
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] })
  t.teardown(() => {
    if (child.exitCode === null && child.pid !== undefined) process.kill(child.pid, 'SIGKILL')
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
  return new Promise((resolve, reject) => {
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stdout, stderr }))
  })
}

/** `-h 127.0.0.1 -p <port>` for a broker URL, and a user's login. */
export function mosqTarget(url: string, login?: { user: string; password: string }): string[] {
  const u = new URL(url)
  return ['-h', u.hostname, '-p', u.port, ...(login ? ['-u', login.user, '-P', login.password] : [])]
}

/** The SUBACK's return codes (0x80 for a refused filter; mqtt.js rejects then, with the packet). */
export async function grantedQos(c: mqtt.MqttClient, filters: string[]): Promise<number[]> {
  try {
    return (await c.subscribeAsync(filters, { qos: 1 })).map((g) => g.qos)
  } catch (err) {
    const granted = (err as { packet?: { granted?: number[] } }).packet?.granted
    if (granted) return granted
    throw err
  }
}
