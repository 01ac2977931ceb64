// A real RabbitMQ broker for a test file: its own node name, data dir, AMQP port on loopback,
// distribution port and epmd (on its own port, started here so it can be stopped by pid too), no
// plugins. Starting one takes seconds, so a test file starts one and shares it. Stopped by pid
// (SIGTERM: RabbitMQ stops cleanly), and restartable on the same data dir to test a broker restart.
// `rabbitmqMissing()` says why there is none, for `{ skip }`.
import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort } from './ports.ts'
import type { Teardown } from './tmp.ts'
import { waitFor } from './wait.ts'

const SERVER = '/usr/lib/rabbitmq/bin/rabbitmq-server'
const EPMD_CANDIDATES = ['/usr/bin/epmd', '/usr/lib/erlang/bin/epmd']

/** Why RabbitMQ cannot be started here, or null when it can. */
export function rabbitmqMissing(): string | null {
  if (!existsSync(SERVER)) return `${SERVER} not found (Debian: apt-get install rabbitmq-server)`
  if (!EPMD_CANDIDATES.some((p) => existsSync(p))) return 'epmd (Erlang) not found'
  return null
}

export interface RabbitBroker {
  /** `amqp://svc-test@127.0.0.1:PORT`: the user, without its password. */
  url: string
  /** The user's password (random per broker). */
  password: string
  urlWithPassword: string
  port: number
  dir: string
  /** The broker's pid while it runs. */
  pid(): number | undefined
  /** SIGTERM by pid, and wait for it to exit. */
  stop(): Promise<void>
  /** Start again on the same port and data dir (queues and persistent messages survive). */
  start(): Promise<void>
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host: '127.0.0.1', port })
    s.once('connect', () => {
      s.destroy()
      resolve(true)
    })
    s.once('error', () => resolve(false))
  })
}

function exited(p: ChildProcess): Promise<void> {
  if (p.exitCode !== null || p.signalCode !== null) return Promise.resolve()
  return new Promise((r) => p.once('exit', () => r()))
}

async function stopByPid(p: ChildProcess, graceMs: number): Promise<void> {
  if (p.exitCode !== null || p.signalCode !== null || p.pid === undefined) return
  process.kill(p.pid, 'SIGTERM')
  const timer = setTimeout(() => {
    if (p.exitCode === null && p.signalCode === null && p.pid !== undefined) process.kill(p.pid, 'SIGKILL')
  }, graceMs)
  await exited(p)
  clearTimeout(timer)
}

export async function startRabbitmq(t: Teardown): Promise<RabbitBroker> {
  // Removed by the teardown below, after the broker has stopped writing to it.
  const dir = await mkdtemp(join(tmpdir(), 'svc-rabbit-'))
  const password = randomBytes(12).toString('hex')
  const [port, distPort, epmdPort] = [await freePort(), await freePort(), await freePort()]
  await mkdir(join(dir, 'log'), { recursive: true })
  await writeFile(join(dir, 'enabled_plugins'), '[].\n')
  await writeFile(join(dir, 'rabbitmq-env.conf'), '')
  await writeFile(
    join(dir, 'rabbitmq.conf'),
    [
      `listeners.tcp.default = 127.0.0.1:${port}`,
      'log.console = false',
      'log.file.level = warning',
      // Created on the first boot of this data dir.
      'default_user = svc-test',
      `default_pass = ${password}`,
      '',
    ].join('\n'),
  )
  const epmdBin = EPMD_CANDIDATES.find((p) => existsSync(p))!
  const epmd = spawn(epmdBin, ['-port', String(epmdPort)], { stdio: 'ignore' })
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    HOME: dir, // the Erlang cookie is created here, not in the user's home
    ERL_EPMD_PORT: String(epmdPort),
    RABBITMQ_CONF_ENV_FILE: join(dir, 'rabbitmq-env.conf'),
    RABBITMQ_CONFIG_FILE: join(dir, 'rabbitmq.conf'),
    RABBITMQ_ADVANCED_CONFIG_FILE: join(dir, 'advanced.config'),
    RABBITMQ_ENABLED_PLUGINS_FILE: join(dir, 'enabled_plugins'),
    RABBITMQ_NODENAME: `svc-test-${port}@localhost`,
    RABBITMQ_NODE_IP_ADDRESS: '127.0.0.1',
    RABBITMQ_NODE_PORT: String(port),
    RABBITMQ_DIST_PORT: String(distPort),
    RABBITMQ_MNESIA_BASE: join(dir, 'mnesia'),
    RABBITMQ_LOG_BASE: join(dir, 'log'),
    RABBITMQ_PID_FILE: join(dir, 'rabbit.pid'),
    // The script then execs the VM (so the pid is the broker's) with the Erlang shell reading our
    // stdin pipe: when the test process dies, the pipe closes and the broker stops with it.
    RABBITMQ_ALLOW_INPUT: 'true',
  }
  let proc: ChildProcess | null = null
  let output = ''

  const start = async (): Promise<void> => {
    output = ''
    const p = spawn(SERVER, [], { env, stdio: ['pipe', 'pipe', 'pipe'] })
    proc = p
    const keep = (d: Buffer) => {
      output = (output + d.toString()).slice(-4000)
    }
    p.stdout!.on('data', keep)
    p.stderr!.on('data', keep)
    await waitFor(
      async () => {
        if (p.exitCode !== null || p.signalCode !== null)
          throw new Error(`rabbitmq-server exited (${p.exitCode ?? p.signalCode}): ${output}`)
        return portOpen(port)
      },
      `RabbitMQ to listen on 127.0.0.1:${port}`,
      { timeoutMs: 120_000, intervalMs: 200 },
    )
  }
  const stop = async (): Promise<void> => {
    if (proc) await stopByPid(proc, 30_000)
    proc = null
  }
  t.teardown(async () => {
    await stop()
    await stopByPid(epmd, 5_000)
    await rm(dir, { recursive: true, force: true })
  })
  await start()
  return {
    url: `amqp://svc-test@127.0.0.1:${port}`,
    password,
    urlWithPassword: `amqp://svc-test:${password}@127.0.0.1:${port}`,
    port,
    dir,
    pid: () => proc?.pid,
    stop,
    start,
  }
}
