// A throwaway PostgreSQL cluster for a test file: `initdb` in a temp dir, `postgres` on its own
// free port on 127.0.0.1 with its unix socket in that dir, stopped by pid (SIGINT: fast shutdown).
// Starting one takes about a second, so a test file starts one and makes a database per use.
// initdb and postgres refuse to run as root (CI runs as root): then both run as `nobody`, on a
// temp dir handed to that user. `postgresMissing()` says why there is none, for `{ skip }`.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { existsSync, readdirSync } from 'node:fs'
import { chown, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { freePort } from './ports.ts'
import type { Teardown } from './tmp.ts'
import { waitFor } from './wait.ts'

/** Debian puts the server binaries here, one folder per major version; the newest wins. */
function binDir(): string | null {
  const fromEnv = process.env.SVC_PG_BIN
  if (fromEnv) return existsSync(join(fromEnv, 'postgres')) ? fromEnv : null
  const root = '/usr/lib/postgresql'
  if (existsSync(root)) {
    const versions = readdirSync(root)
      .filter((v) => existsSync(join(root, v, 'bin', 'postgres')))
      .sort((a, b) => Number(b) - Number(a))
    if (versions[0]) return join(root, versions[0], 'bin')
  }
  const which = spawnSync('sh', ['-c', 'command -v postgres'], { encoding: 'utf8' })
  const p = which.stdout.trim()
  return p ? p.slice(0, p.lastIndexOf('/')) : null
}

/** Why PostgreSQL cannot be started here, or null when it can. */
export function postgresMissing(): string | null {
  const dir = binDir()
  if (!dir)
    return 'PostgreSQL server binaries not found (Debian: apt-get install postgresql; or set SVC_PG_BIN)'
  if (!existsSync(join(dir, 'initdb'))) return `${dir}/initdb not found`
  return null
}

export interface PgCluster {
  port: number
  /** `postgres://svc@127.0.0.1:PORT/postgres` */
  url: string
  /** A fresh, empty database on this cluster; its URL. */
  createDatabase(name?: string): Promise<string>
  pid(): number | undefined
  stop(): Promise<void>
}

let dbSeq = 0

/** Who runs the server: ourselves, or `nobody` when we are root. */
function runAs(): { uid: number; gid: number } | null {
  if (process.getuid?.() !== 0) return null
  const id = spawnSync('id', ['-u', 'nobody'], { encoding: 'utf8' })
  const gid = spawnSync('id', ['-g', 'nobody'], { encoding: 'utf8' })
  return { uid: Number(id.stdout.trim()), gid: Number(gid.stdout.trim()) }
}

function exited(p: ChildProcess): Promise<void> {
  if (p.exitCode !== null || p.signalCode !== null) return Promise.resolve()
  return new Promise((r) => p.once('exit', () => r()))
}

export interface PgOptions {
  /**
   * Keep fsync on: for benchmarks that count commits. Tests turn it off (the cluster is thrown
   * away; the once-only rules rest on constraints and transactions, not on the disk).
   */
  durable?: boolean
}

export async function startPostgres(t: Teardown, o: PgOptions = {}): Promise<PgCluster> {
  const bin = binDir()
  if (!bin) throw new Error(postgresMissing() ?? 'no PostgreSQL')
  const dir = await mkdtemp(join(tmpdir(), 'svc-pg-'))
  const as = runAs()
  if (as) await chown(dir, as.uid, as.gid)
  const data = join(dir, 'data')
  const spawnOpts = { ...(as ? { uid: as.uid, gid: as.gid } : {}), env: { ...process.env, LC_ALL: 'C' } }
  const init = spawnSync(
    join(bin, 'initdb'),
    ['-D', data, '-U', 'svc', '--auth=trust', '-E', 'UTF8', '--no-locale', '--no-sync'],
    { ...spawnOpts, encoding: 'utf8', cwd: dir },
  )
  if (init.status !== 0) {
    await rm(dir, { recursive: true, force: true })
    throw new Error(`initdb failed (${init.status}): ${init.stderr || init.stdout}`)
  }
  const port = await freePort()
  const args = [
    '-D',
    data,
    '-p',
    String(port),
    '-c',
    'listen_addresses=127.0.0.1',
    '-c',
    `unix_socket_directories=${dir}`,
    '-c',
    'max_connections=200',
    '-c',
    'shared_buffers=64MB',
  ]
  if (!o.durable) args.push('-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off')
  const proc = spawn(join(bin, 'postgres'), args, {
    ...spawnOpts,
    cwd: dir,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  const keep = (d: Buffer) => {
    output = (output + d.toString()).slice(-4000)
  }
  proc.stdout!.on('data', keep)
  proc.stderr!.on('data', keep)
  const url = `postgres://svc@127.0.0.1:${port}/postgres`
  // A test process that ends without its teardown (an uncaught error, process.exit) must not
  // leave the server running: 'exit' handlers may only do synchronous work, and a kill is that.
  const onExit = () => {
    if (proc.pid !== undefined && proc.exitCode === null) {
      try {
        process.kill(proc.pid, 'SIGINT')
      } catch {
        // already gone
      }
    }
  }
  process.once('exit', onExit)
  const stop = async (): Promise<void> => {
    process.removeListener('exit', onExit)
    if (proc.exitCode === null && proc.signalCode === null && proc.pid !== undefined) {
      try {
        process.kill(proc.pid, 'SIGINT')
      } catch {
        return // it had already exited
      }
      const timer = setTimeout(() => proc.pid !== undefined && proc.kill('SIGKILL'), 20_000)
      await exited(proc)
      clearTimeout(timer)
    }
  }
  t.teardown(async () => {
    await stop()
    await rm(dir, { recursive: true, force: true })
  })
  await waitFor(
    async () => {
      if (proc.exitCode !== null || proc.signalCode !== null)
        throw new Error(`postgres exited (${proc.exitCode ?? proc.signalCode}): ${output}`)
      const c = new pg.Client({ connectionString: url })
      try {
        await c.connect()
        await c.query('select 1')
        return true
      } catch {
        return false
      } finally {
        await c.end().catch(() => undefined)
      }
    },
    `PostgreSQL to accept connections on 127.0.0.1:${port}`,
    { timeoutMs: 60_000, intervalMs: 100 },
  )
  return {
    port,
    url,
    pid: () => proc.pid,
    stop,
    async createDatabase(name?: string) {
      const db = name ?? `svc_${process.pid}_${++dbSeq}`
      const c = new pg.Client({ connectionString: url })
      await c.connect()
      try {
        await c.query(`create database "${db}"`)
      } finally {
        await c.end()
      }
      return `postgres://svc@127.0.0.1:${port}/${db}`
    },
  }
}
