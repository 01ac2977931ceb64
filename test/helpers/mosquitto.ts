// A real Mosquitto broker for tests: on a free loopback port, its config and state in a temp
// folder, stopped by pid when the test ends. Tests skip with `noMosquitto` as the reason when
// Debian's `mosquitto` is not installed.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { writeFile } from 'node:fs/promises'
import { connect } from 'node:net'
import { join } from 'node:path'
import { freePort } from './ports.ts'
import { tempDir, type Teardown } from './tmp.ts'
import { waitFor } from './wait.ts'

const BIN = ['/usr/sbin/mosquitto', 'mosquitto'].find((b) => spawnSync(b, ['-h']).error === undefined)

export const noMosquitto: false | string = BIN
  ? false
  : 'mosquitto is not installed (apt-get install mosquitto): the external-broker test needs it'

export interface Mosquitto {
  url: string
  port: number
  proc: ChildProcess
  log: () => string
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1')
    s.once('connect', () => {
      s.destroy()
      resolve(true)
    })
    s.once('error', () => resolve(false))
  })
}

/**
 * Anonymous clients allowed: it listens on loopback only (Mosquitto 2.0's local-only rule).
 * `port`: the port of one stopped before, to start it again where its clients reconnect.
 */
export async function startMosquitto(t: Teardown, opts: { port?: number } = {}): Promise<Mosquitto> {
  if (!BIN) throw new Error(noMosquitto as string)
  const dir = await tempDir(t, 'svc-mosquitto-')
  const port = opts.port ?? (await freePort())
  const conf = join(dir, 'mosquitto.conf')
  await writeFile(conf, `listener ${port} 127.0.0.1\nallow_anonymous true\npersistence false\n`)
  const proc = spawn(BIN, ['-c', conf], { stdio: ['ignore', 'pipe', 'pipe'] })
  let log = ''
  proc.stdout!.on('data', (d: Buffer) => (log += d.toString()))
  proc.stderr!.on('data', (d: Buffer) => (log += d.toString()))
  const exited = new Promise<void>((r) => proc.once('exit', () => r()))
  t.teardown(async () => {
    if (proc.exitCode === null && proc.signalCode === null && proc.pid !== undefined) {
      process.kill(proc.pid, 'SIGTERM')
      await exited
    }
  })
  await waitFor(async () => proc.exitCode !== null || (await accepts(port)), 'mosquitto to listen')
  if (proc.exitCode !== null) throw new Error(`mosquitto exited (${proc.exitCode}): ${log}`)
  return { url: `mqtt://127.0.0.1:${port}`, port, proc, log: () => log }
}
