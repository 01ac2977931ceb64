// The embedded MQTT broker: Aedes on TCP (and optionally MQTT over WebSocket), persisting QoS 1
// messages, retained messages and persistent sessions in LevelDB so they survive a restart.
import { createServer as createTcpServer, type Server as TcpServer, type AddressInfo } from 'node:net'
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http'
import { mkdir } from 'node:fs/promises'
import { Aedes } from 'aedes'
import { Level } from 'level'
import { WebSocketServer, createWebSocketStream } from 'ws'
// @ts-expect-error aedes-persistence-level ships no types: (db: Level) => persistence
import aedesPersistenceLevel from 'aedes-persistence-level'
import { HUB_LEVELDB_SIZES } from '../leveldb.ts'
import { forwardOnce } from './forward-once.ts'
import type { Log } from '../log.ts'

export interface BrokerOptions {
  host: string
  port: number
  /** MQTT over WebSocket on this port; null = off. */
  wsPort: number | null
  /** LevelDB folder for the broker's persistence. */
  dbPath: string
  log: Log
}

export interface EmbeddedBroker {
  aedes: Aedes
  /** `mqtt://host:port` (with the real port when 0 was asked). */
  url: string
  port: number
  wsUrl: string | null
  close(): Promise<void>
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
  await mkdir(opts.dbPath, { recursive: true })
  const db = new Level<string, Buffer>(opts.dbPath, { valueEncoding: 'buffer', ...HUB_LEVELDB_SIZES })
  await db.open()
  const once = forwardOnce()
  const aedes = await Aedes.createBroker({
    persistence: aedesPersistenceLevel(db) as unknown,
    preConnect: once.preConnect,
    authorizeForward: once.authorizeForward,
  })
  // A misbehaving client is its own problem: log it, never let it reach the process.
  aedes.on('clientError', (client, err) => {
    const entry = { client: client?.id, err: err.message }
    if (clientErrorLevel(err.message) === 'warn') log.warn(entry, 'mqtt client error')
    else log.debug?.(entry, 'mqtt client error')
  })
  aedes.on('connectionError', (client, err) =>
    log.warn({ client: client?.id, err: err.message }, 'mqtt connection error'),
  )

  const tcp = createTcpServer(aedes.handle)
  tcp.on('error', (err) => log.error({ err: err.message }, 'broker tcp server error'))
  let http: HttpServer | undefined
  let wss: WebSocketServer | undefined
  try {
    const port = await listen(tcp, opts.port, opts.host)
    let wsUrl: string | null = null
    if (opts.wsPort !== null) {
      http = createHttpServer()
      wss = new WebSocketServer({ server: http })
      wss.on('connection', (socket, req) => {
        const stream = createWebSocketStream(socket)
        stream.on('error', (err) => log.warn({ err: err.message }, 'mqtt websocket stream error'))
        aedes.handle(stream, req)
      })
      const wsPort = await listen(http, opts.wsPort, opts.host)
      wsUrl = `ws://${hostForUrl(opts.host)}:${wsPort}`
    }
    const url = `mqtt://${hostForUrl(opts.host)}:${port}`
    log.info({ url, wsUrl, db: opts.dbPath }, 'embedded broker listening')
    let closed = false
    return {
      aedes,
      url,
      port,
      wsUrl,
      async close() {
        if (closed) return
        closed = true
        // Stop taking connections, then close the broker (it disconnects clients and flushes
        // persistence), then the database: in that order so no write lands on a closed db.
        const servers: Promise<void>[] = [closeServer(tcp)]
        if (wss) {
          for (const c of wss.clients) c.terminate()
          wss.close()
        }
        if (http) servers.push(closeServer(http))
        // A client that just disconnected still has persistence work in flight (its will, its
        // session); give it a bounded moment so that work never lands on a closed database.
        for (let i = 0; i < 100 && aedes.connectedClients > 0; i++)
          await new Promise((r) => setTimeout(r, 10))
        await new Promise<void>((resolve) => aedes.close(() => resolve()))
        await new Promise((r) => setTimeout(r, 20))
        await Promise.all(servers)
        await db.close()
      },
    }
  } catch (err) {
    tcp.close()
    http?.close()
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
