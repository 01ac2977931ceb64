// The embedded MQTT broker: Aedes on TCP (and optionally MQTT over WebSocket, and both over TLS),
// persisting QoS 1 messages, retained messages and persistent sessions in LevelDB so they survive
// a restart. Who may connect, publish and subscribe: hub/broker/auth.ts.
import { createServer as createTcpServer, type Server as TcpServer, type AddressInfo } from 'node:net'
import { createServer as createHttpServer, type IncomingMessage, type Server as HttpServer } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import { createServer as createTlsServer } from 'node:tls'
import { mkdir } from 'node:fs/promises'
import type { Duplex } from 'node:stream'
import { Aedes, type Client } from 'aedes'
import { Level } from 'level'
import { type WebSocket, WebSocketServer, createWebSocketStream } from 'ws'
// @ts-expect-error aedes-persistence-level ships no types: (db: Level) => persistence
import aedesPersistenceLevel from 'aedes-persistence-level'
import { HUB_LEVELDB_SIZES } from '../leveldb.ts'
import { ackAfterStore } from './ack-after-store.ts'
import { type TriggerFeed, triggerFeed } from './trigger-feed.ts'
import { watchSubscribers } from './subscribers.ts'
import { readInSlices } from './read-slices.ts'
import { writePerTurn } from './write-per-turn.ts'
import { clearQueue, queuedEvents, withholdQueue } from './leftovers.ts'
import { type LevelLike, batchedDb } from './batched-db.ts'
import { cleanSessionAcks } from './clean-acks.ts'
import { forwardOnce, replayOnce } from './forward-once.ts'
import { noDelayStream } from './no-delay.ts'
import { orderedPersistence } from './order.ts'
import { volatileRetained } from './volatile-retained.ts'
import { reserveStoredPacketIds } from './packet-ids.ts'
import type { Log } from '../log.ts'
import type { Principal } from './acl.ts'
import { AclError, createBrokerAuth, type Listener } from './auth.ts'
import { isLoopbackHost } from '../../net/loopback.ts'
import { readTlsFiles } from './tls.ts'
import { openReopenable } from '../disk/reopenable-level.ts'
import { errorText } from '../../errors/text.ts'

export interface BrokerOptions {
  host: string
  port: number
  /** MQTT over WebSocket on this port; null = off. */
  wsPort: number | null
  /** LevelDB folder for the broker's persistence. */
  dbPath: string
  log: Log
  /** The accounts file (`svc hub user`, hub/broker/accounts-file.ts); absent: no accounts. */
  accountsFile?: string | null
  /** Boards on the hub's own ports (`[[boards]]`): their topics are published by the hub alone. */
  hubBoards?: readonly string[]
  /** The hub session's client id, reserved for the hub's own credential. */
  hubClientId?: string | null
  /** MQTT over TLS and/or WebSocket over TLS on `host`, with a PEM certificate and key. */
  tls?: { host: string; port: number | null; wssPort: number | null; cert: string; key: string } | null
  /** The trigger filters at start: their messages are kept for the router until it attaches (trigger-feed.ts). */
  triggerFilters?: readonly string[]
  /** Topics whose retained message is kept in memory, not stored (volatile-retained.ts). */
  volatileRetained?: readonly string[]
  /** A write to the broker's LevelDB failed with an I/O error (a full disk: hub/disk/). */
  onStoreError?: (err: unknown) => void
}

export interface EmbeddedBroker {
  aedes: Aedes
  /** `mqtt://host:port` (with the real port when 0 was asked). */
  url: string
  port: number
  wsUrl: string | null
  /** `mqtts://host:port` when the TLS listener is on. */
  tlsUrl: string | null
  /** `wss://host:port` when the WebSocket-over-TLS listener is on. */
  wssUrl: string | null
  /** The hub's triggers, subscribed inside the broker (trigger-feed.ts). */
  triggers: TriggerFeed
  /** True when a message on `topic` would reach a subscribed client or a trigger (subscribers.ts). */
  heard(topic: string): boolean
  /** How the hub's own session logs in: made at each start, in memory only, never refused. */
  hubLogin: { username: string; password: string }
  /** Who a connected client is (its account), for what the hub logs of the requests it takes. */
  principalOf(client: Client): Principal | undefined
  /** Re-reads the accounts file (SIGHUP; the file is also watched). */
  reloadAccounts(): Promise<void>
  /** Opens the broker's LevelDB again after a write failed, once the disk has room (hub/disk/). */
  reopenStore(): Promise<void>
  /** The broker's LevelDB entries, from one snapshot, for a backup (hub/backup/). */
  storeEntries(): AsyncIterable<[Buffer, Buffer]>
  close(): Promise<void>
}

/** Why the broker will not start on a listener beyond loopback with no accounts, and the fix. */
export function noAccountsError(listener: Listener, accountsFile: string | null): string {
  const key = listener.name === 'mqtts' || listener.name === 'wss' ? 'broker.tls_host' : 'broker.host'
  return (
    `${key} = "${listener.host}" (${listener.name}) is not a loopback address, and there are no broker accounts` +
    `${accountsFile ? ` in ${accountsFile}` : ''}: anonymous clients are accepted only on loopback (Mosquitto 2.0's rule). ` +
    `Add an account with \`npx svc hub user add <name> --role admin|reader|board\`, or bind ${key} to 127.0.0.1`
  )
}

/** The persistence calls made at start for the hub's own session. */
type SessionStore = Parameters<typeof clearQueue>[0] & {
  cleanSubscriptions(client: { id: string }): Promise<void>
}

function listen(server: TcpServer | HttpServer, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error): void => reject(err)
    server.once('error', onError)
    server.listen(port, host, () => {
      server.off('error', onError)
      resolve((server.address() as AddressInfo).port)
    })
  })
}

function closeServer(server: TcpServer | HttpServer): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()))
}

function hostForUrl(host: string): string {
  if (host === '0.0.0.0' || host === '::') return '127.0.0.1'
  return host.includes(':') ? `[${host}]` : host
}

export async function startBroker(opts: BrokerOptions): Promise<EmbeddedBroker> {
  const { log } = opts
  const tlsOpts = opts.tls ?? null
  const at = (name: string, host: string): Listener => ({ name, host, loopback: isLoopbackHost(host) })
  const planned: Listener[] = [at('mqtt', opts.host)]
  if (opts.wsPort !== null) planned.push(at('ws', opts.host))
  if (tlsOpts?.port != null) planned.push(at('mqtts', tlsOpts.host))
  if (tlsOpts?.wssPort != null) planned.push(at('wss', tlsOpts.host))
  const open = planned.find((l) => !l.loopback)
  const accountsFile = opts.accountsFile ?? null
  const made = await createBrokerAuth({
    accountsFile,
    hubBoards: opts.hubBoards ?? [],
    hubClientId: opts.hubClientId ?? null,
    needsAccounts: open !== undefined,
    log,
  })
  if (!made.ok) throw new Error(made.error)
  const auth = made.auth
  if (open && auth.accountCount() === 0) throw new Error(noAccountsError(open, accountsFile))
  const tlsFiles = tlsOpts ? await readTlsFiles(tlsOpts) : null
  if (tlsFiles && !tlsFiles.ok) throw new Error(tlsFiles.error)

  await mkdir(opts.dbPath, { recursive: true })
  // One database object for the broker's life that the disk guard can reopen: after a write
  // failed, none is taken until it is opened again (hub/disk/reopenable-level.ts).
  const level = await openReopenable(
    () => new Level<string, Buffer>(opts.dbPath, { valueEncoding: 'buffer', ...HUB_LEVELDB_SIZES }),
    opts.onStoreError,
  )
  // Writes coalesced per turn of the event loop, values just written read from memory (batched-db.ts).
  const db = batchedDb(level as LevelLike)
  const once = forwardOnce()
  const volatile = new Set(opts.volatileRetained ?? [])
  const aedes = await Aedes.createBroker({
    // Answers persistence calls in the order made, so deliveries keep publish order (order.ts).
    // A queued message already sent live on a connection is not sent from the queue (forward-once.ts).
    // A clean session's PUBACK clears nothing, and is not looked up (clean-acks.ts).
    // The hub's own summaries are retained in memory only (volatile-retained.ts).
    persistence: cleanSessionAcks(
      replayOnce(
        orderedPersistence(volatileRetained(aedesPersistenceLevel(db) as object, (t) => volatile.has(t))),
        once,
      ),
    ) as unknown,
    preConnect: (client, packet, callback) =>
      once.preConnect(client, packet, (err, ok) =>
        err || !ok ? callback(err, ok) : reserveStoredPacketIds(client, packet, callback),
      ),
    authorizeForward: once.authorizeForward,
    authenticate: auth.authenticate,
    authorizePublish: auth.authorizePublish,
    authorizeSubscribe: auth.authorizeSubscribe,
  })
  // The hub's triggers take messages inside the broker, before any client can connect; a QoS 1
  // PUBACK only once the message is stored (ack-after-store.ts) and its triggers admitted.
  const triggers = triggerFeed(aedes, {
    filters: opts.triggerFilters ?? [],
    hubClientId: opts.hubClientId ?? null,
  })
  ackAfterStore(aedes, triggers.ackHooks)
  const subscribed = watchSubscribers(aedes)
  // An older hub's router subscribed its session to the trigger filters; the feed has taken over,
  // and a message delivered both ways would start its runs twice. What that session still has
  // queued goes to the triggers first (leftovers.ts).
  if (opts.hubClientId) {
    const id = opts.hubClientId
    const persistence = (aedes as unknown as { persistence: SessionStore }).persistence
    await persistence.cleanSubscriptions({ id })
    const queued = await queuedEvents(persistence, id)
    if (queued.length > 0) {
      log.info({ events: queued.length }, "events queued for an older hub's session go to the triggers first")
      const cleared = triggers
        .keepFirst(queued)
        .then(() => clearQueue(persistence, id))
        .catch((err: unknown) =>
          log.error(
            { err: errorText(err) },
            "the older hub's session queue was not cleared: its events may run again at the next start",
          ),
        )
      withholdQueue(aedes, id, cleared)
    }
  }
  // A misbehaving client is its own problem: log it, never let it reach the process. Refusals by
  // the ACL were logged with their reason where they were made.
  aedes.on('clientError', (client, err) => {
    if (err instanceof AclError) return
    const entry = { client: client?.id, err: err.message }
    if (clientErrorLevel(err.message) === 'warn') log.warn(entry, 'mqtt client error')
    else log.debug?.(entry, 'mqtt client error')
  })
  aedes.on('connectionError', (client, err) => {
    if (err instanceof AclError) return
    log.warn({ client: client?.id, err: err.message }, 'mqtt connection error')
  })
  aedes.on('clientDisconnect', (client) => auth.forget(client))

  const handleOn = (listener: Listener) => (conn: Duplex, req?: IncomingMessage) => {
    // Aedes leaves Nagle on: every reply would wait out the client's delayed ACK (no-delay.ts).
    noDelayStream(conn)
    writePerTurn(conn)
    auth.tag(conn, listener)
    // No slice is read ahead while the feed holds clients' messages (at its cap, or for room).
    readInSlices(conn, aedes.handle(conn, req), { mayReadAhead: () => triggers.waiting() === 0 })
  }
  const onWebSocket = (listener: Listener) => {
    const handle = handleOn(listener)
    return (socket: WebSocket, req: IncomingMessage): void => {
      const stream = createWebSocketStream(socket)
      stream.on('error', (err) => log.warn({ err: err.message }, 'mqtt websocket stream error'))
      handle(stream, req)
    }
  }
  const tcp = createTcpServer(handleOn(planned[0] as Listener))
  tcp.on('error', (err) => log.error({ err: err.message }, 'broker tcp server error'))
  // Every server besides tcp, and every WebSocket server, so close() can end them all.
  const servers: (TcpServer | HttpServer)[] = []
  const wsServers: WebSocketServer[] = []
  const webSocketsOn = (server: HttpServer, listener: Listener): void => {
    const wss = new WebSocketServer({ server })
    wss.on('connection', onWebSocket(listener))
    wsServers.push(wss)
  }
  try {
    const port = await listen(tcp, opts.port, opts.host)
    let wsUrl: string | null = null
    if (opts.wsPort !== null) {
      const http = createHttpServer()
      servers.push(http)
      webSocketsOn(http, at('ws', opts.host))
      const wsPort = await listen(http, opts.wsPort, opts.host)
      wsUrl = `ws://${hostForUrl(opts.host)}:${wsPort}`
    }
    let tlsUrl: string | null = null
    let wssUrl: string | null = null
    if (tlsOpts && tlsFiles?.ok) {
      const secure = { cert: tlsFiles.cert, key: tlsFiles.key }
      // A failed handshake (a plain-TCP client, an untrusted certificate) is the client's problem.
      const onTlsError = (err: Error): void => log.debug?.({ err: err.message }, 'mqtt tls handshake failed')
      if (tlsOpts.port !== null) {
        const server = createTlsServer(secure, handleOn(at('mqtts', tlsOpts.host)))
        server.on('tlsClientError', onTlsError)
        servers.push(server)
        tlsUrl = `mqtts://${hostForUrl(tlsOpts.host)}:${await listen(server, tlsOpts.port, tlsOpts.host)}`
      }
      if (tlsOpts.wssPort !== null) {
        const https = createHttpsServer(secure)
        https.on('tlsClientError', onTlsError)
        servers.push(https)
        webSocketsOn(https, at('wss', tlsOpts.host))
        wssUrl = `wss://${hostForUrl(tlsOpts.host)}:${await listen(https, tlsOpts.wssPort, tlsOpts.host)}`
      }
    }
    const url = `mqtt://${hostForUrl(opts.host)}:${port}`
    auth.watch()
    log.info(
      {
        url,
        wsUrl,
        tlsUrl,
        wssUrl,
        db: opts.dbPath,
        accounts: auth.accountCount(),
        anonymous: planned.filter((l) => l.loopback).map((l) => l.name),
      },
      'embedded broker listening',
    )
    if (planned.some((l) => !l.loopback && (l.name === 'mqtt' || l.name === 'ws')))
      log.warn(
        { host: opts.host },
        'broker.host is beyond loopback without TLS: passwords cross the network in clear (set broker.tls_port, and bind broker.host to 127.0.0.1)',
      )
    let closed = false
    return {
      aedes,
      triggers,
      heard: (topic) => triggers.wants(topic) || subscribed(topic),
      url,
      port,
      wsUrl,
      tlsUrl,
      wssUrl,
      hubLogin: auth.hubLogin,
      principalOf: (client) => auth.principal(client),
      reloadAccounts: () => auth.reload(),
      reopenStore: () => level.reopen(),
      storeEntries: () => level.entries(),
      async close() {
        if (closed) return
        closed = true
        auth.close()
        // Stop taking connections, then close the broker (it disconnects clients and flushes
        // persistence), then the database: in that order so no write lands on a closed db.
        const closing: Promise<void>[] = [closeServer(tcp)]
        for (const wss of wsServers) {
          for (const c of wss.clients) c.terminate()
          wss.close()
        }
        for (const server of servers) closing.push(closeServer(server))
        // A client that just disconnected still has persistence work in flight (its will, its
        // session); give it a bounded moment so that work never lands on a closed database.
        for (let i = 0; i < 100 && aedes.connectedClients > 0; i++)
          await new Promise((r) => setTimeout(r, 10))
        await new Promise<void>((resolve) => aedes.close(() => resolve()))
        await new Promise((r) => setTimeout(r, 20))
        await Promise.all(closing)
        await db.close()
      },
    }
  } catch (err) {
    auth.close()
    tcp.close()
    for (const server of servers) server.close()
    await new Promise<void>((resolve) => aedes.close(() => resolve()))
    await db.close()
    throw err
  }
}

/**
 * A client that simply hangs up (the hub's own client at shutdown, a board going away) is routine,
 * not a warning: Aedes reports it as a clientError "connection closed". Anything else is the client's fault.
 */
export function clientErrorLevel(message: string): 'debug' | 'warn' {
  return message === 'connection closed' ? 'debug' : 'warn'
}
