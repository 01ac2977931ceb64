// Starting the console with the hub (hub/daemon/hub.ts): checks the bind is safe, keeps each
// board's availability and last event from the bridge's callbacks, feeds the event stream from
// engine.watch, listens, and mints the one-time sign-in links `svc hub` and `svc start` print.
// Beyond loopback the console needs the owner password (Mosquitto 2.0's rule, as the broker and
// the webhook gateway), and HTTPS, since its session cookie is then Secure.
import { readFile } from 'node:fs/promises'
import type { FastifyInstance } from 'fastify'
import { isLoopbackHost } from '../../net/loopback.ts'
import type { HubEngine } from '../../sops/hub-engine.ts'
import type { Diagnostic, Sop } from '../../sops/types.ts'
import type { BridgeStats, Json, SendResult } from '../../bridge/types.ts'
import type { HubConfig } from '../daemon/config.ts'
import { loadAll } from '../listing/queue.ts'
import type { ListingEntry } from '../listing/record.ts'
import type { Log } from '../log.ts'
import { buildConsoleApp } from './app.ts'
import { createFailureLimiter } from './auth/failures.ts'
import { ownerPath, readOwnerFile } from './auth/owner-file.ts'
import { createLoginLinks, createSessionStore } from './auth/tokens.ts'
import type { FlashEvent } from '../flash/flasher.ts'
import type { ConsoleAttestation, ConsoleBoard, ConsoleFlash } from './context.ts'
import { createBroadcaster } from './events.ts'
import type { DiskView } from '../disk/view.ts'

/** What the console needs of the bridge (hub/daemon/parts.ts BridgeLike has it; not imported: parts.ts imports this file). */
export interface ConsoleBridge {
  stats(): BridgeStats
  send(board: string, cmd: string, args: Json, opts: { timeoutMs: number }): Promise<SendResult>
}

export interface ConsoleOptions {
  config: HubConfig['console']
  dataDir: string
  /** $SVC_HOME, where queued listings live. */
  home: string
  engine: HubEngine
  sops(): readonly Sop[]
  diagnostics(): readonly Diagnostic[]
  sopsDir: string
  boards: readonly string[]
  bridge: ConsoleBridge | null
  boardTimeoutMs: number
  attestation: ConsoleAttestation | null
  /** The disk guard (hub/disk/guard.ts): the overview shows it, live on the `disk` topic. */
  disk?: { view(): DiskView; onChange(fn: (v: DiskView) => void): () => void } | null
  /** Board firmware (the board flash page); null or absent without boards. */
  flash?: ConsoleFlash | null
  log: Log
  now?: () => number
}

export interface RunningConsole {
  url: string
  /** A fresh one-time sign-in link (valid 15 minutes, once). */
  loginLink(): string
  /** The bridge published `payload` on `topic` (hub.ts forwards every publish). */
  seen(topic: string, payload: string, opts: { retain: boolean }): void
  availability(board: string, state: 'online' | 'offline'): void
  /** A board flash moved on (hub/flash/flasher.ts): the firmware pages refresh. */
  flash?(e: FlashEvent): void
  app: FastifyInstance
  close(): Promise<void>
}

/** Why the console must not start with this config, or null. */
export function consoleBindError(c: HubConfig['console'], hasPassword: boolean): string | null {
  if (isLoopbackHost(c.host)) return null
  if (!hasPassword)
    return `console.host "${c.host}" is beyond loopback and no console owner password is set: run \`svc hub console-password\` first, or bind console.host to 127.0.0.1`
  if (c.tls === null)
    return `console.host "${c.host}" is beyond loopback without HTTPS: the password and session would cross the network in clear; set console.tls_cert and console.tls_key (PEM), or bind to 127.0.0.1 behind a TLS proxy`
  return null
}

export async function startConsole(o: ConsoleOptions): Promise<RunningConsole> {
  const now = o.now ?? Date.now
  const ownerFile = ownerPath(o.dataDir)
  const owner = await readOwnerFile(ownerFile)
  if (!owner.ok) throw new Error(`console: ${owner.error}`)
  const bindError = consoleBindError(o.config, owner.hash !== null)
  if (bindError) throw new Error(bindError)
  let https: { cert: Buffer; key: Buffer } | undefined
  if (o.config.tls) {
    const read = async (f: string, what: string): Promise<Buffer> =>
      readFile(f).catch((err: Error) => {
        throw new Error(`console.${what}: cannot read ${f}: ${err.message}`)
      })
    https = { cert: await read(o.config.tls.cert, 'tls_cert'), key: await read(o.config.tls.key, 'tls_key') }
  }

  const boards = new Map<string, ConsoleBoard>(
    o.boards.map((name) => [name, { name, availability: 'offline', lastEvent: null, since: null }]),
  )
  const events = createBroadcaster()
  const links = createLoginLinks()
  const unwatch = o.engine.watch((change) => {
    if (change.kind === 'run') events.publish('run', change.run)
    else events.publish('kept', { sop: change.sop })
  })
  const unwatchDisk = o.disk?.onChange((v) => events.publish('disk', v)) ?? (() => undefined)
  const { app } = await buildConsoleApp({
    ctx: {
      engine: o.engine,
      sops: o.sops,
      diagnostics: o.diagnostics,
      sopsDir: o.sopsDir,
      boards: {
        list: () => [...boards.values()].map((b) => ({ ...b })),
        stats: () => o.bridge?.stats() ?? null,
        send: async (board, cmd, args, timeoutMs) =>
          o.bridge
            ? o.bridge.send(board, cmd, args, { timeoutMs: timeoutMs ?? o.boardTimeoutMs })
            : { ok: false, error: 'no boards are configured on this hub', code: 'unknown_board' },
      },
      attestation: o.attestation,
      flash: o.flash ?? null,
      disk: () => o.disk?.view() ?? null,
      listings: async (): Promise<ListingEntry[]> =>
        (await loadAll(o.home)).flatMap((e) => (e.ok ? [e.entry] : [])),
      events,
      log: o.log,
    },
    auth: {
      sessions: createSessionStore(),
      links,
      limiter: createFailureLimiter(),
      ownerFile,
      secure: o.config.tls !== null || !isLoopbackHost(o.config.host),
      now,
    },
    ...(https ? { https } : {}),
  })
  let url: string
  try {
    url = await app.listen({ host: o.config.host, port: o.config.port })
  } catch (err) {
    unwatch()
    unwatchDisk()
    events.close()
    await app.close()
    throw err
  }
  o.log.info({ url }, 'console listening')
  return {
    url,
    app,
    loginLink: () => `${url}/login#token=${links.mint(now())}`,
    seen(topic, payload, opts) {
      if (opts.retain) return
      const levels = topic.split('/')
      if (levels.length !== 3 || levels[0] !== 'boards') return
      const b = boards.get(levels[1] as string)
      if (!b) return
      b.lastEvent = { signal: levels[2] as string, text: payload.slice(0, 512), at: now() }
      events.publish('board-event', { board: b.name, ...b.lastEvent })
    },
    flash(e) {
      events.publish(
        'flash',
        e.kind === 'phase'
          ? { board: e.board, phase: e.phase, percent: e.percent }
          : { board: e.board, outcome: e.outcome },
      )
    },
    availability(board, state) {
      const b = boards.get(board)
      if (!b || b.availability === state) return
      b.availability = state
      b.since = now()
      events.publish('board', { board, availability: state })
    },
    async close() {
      unwatch()
      unwatchDisk()
      events.close()
      await app.close()
    },
  }
}
