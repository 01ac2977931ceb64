// Server-sent events to the open consoles (HTML Living Standard §9.2, "Server-sent events").
// One stream per open page at GET /events?topics=a,b: a page names the topics it shows, so a page
// of runs is not sent 200 board events a second. Each message is `event: <topic>` with one JSON
// `data:` line. A client that does not read (its socket buffer past MAX_BUFFERED) is cut off
// rather than buffered without bound; EventSource reconnects by itself and the page refetches.
import type { ServerResponse } from 'node:http'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { fail, type Result } from '../../errors/codes.ts'

/** Topics the hub publishes; pages subscribe by name. */
export const TOPICS = ['run', 'kept', 'board', 'board-event', 'attest', 'flash', 'disk'] as const
export type Topic = (typeof TOPICS)[number]

const MAX_BUFFERED = 1024 * 1024
/** A comment line this often keeps proxies and NAT tables from closing an idle stream. */
const KEEPALIVE_MS = 25_000

interface Client {
  res: ServerResponse
  topics: ReadonlySet<Topic>
  /** The session the stream belongs to (its key, never the cookie), so sign-out can end it. */
  owner: string
}

export interface Broadcaster {
  /** Sends `data` (JSON) to every client subscribed to `topic`. */
  publish(topic: Topic, data: unknown): void
  /** Takes over the reply as an event stream until the client goes away or close() is called. */
  attach(req: FastifyRequest, reply: FastifyReply, topics: ReadonlySet<Topic>, owner: string): void
  /** Ends every stream of a session (signed out): a stream outliving its session would go on reporting. */
  drop(owner: string): void
  clients(): number
  close(): void
}

/** The topics a `topics=` query asks for, or why not. Pure. */
export function parseTopics(q: unknown): Result<{ topics: Set<Topic> }> {
  if (q === undefined || q === '') return { ok: true, topics: new Set(TOPICS) }
  if (typeof q !== 'string') return fail('BAD_INPUT', 'topics: give one comma-separated list')
  const out = new Set<Topic>()
  for (const t of q.split(',')) {
    if (!(TOPICS as readonly string[]).includes(t))
      return fail('BAD_INPUT', `topics: unknown topic "${t.slice(0, 40)}" (one of ${TOPICS.join(', ')})`)
    out.add(t as Topic)
  }
  return { ok: true, topics: out }
}

export function createBroadcaster(): Broadcaster {
  const clients = new Set<Client>()
  const keepalive = setInterval(() => {
    for (const c of clients) write(c, ': keepalive\n\n')
  }, KEEPALIVE_MS)
  keepalive.unref()

  function write(c: Client, text: string): void {
    if (c.res.writableLength > MAX_BUFFERED) {
      clients.delete(c)
      c.res.destroy()
      return
    }
    c.res.write(text)
  }

  return {
    publish(topic, data) {
      if (clients.size === 0) return
      // Serialised once for every client; JSON has no raw newline, so one data: line is enough.
      const text = `event: ${topic}\ndata: ${JSON.stringify(data)}\n\n`
      for (const c of clients) if (c.topics.has(topic)) write(c, text)
    },
    attach(req, reply, topics, owner) {
      reply.hijack()
      const res = reply.raw
      res.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-store',
        'x-content-type-options': 'nosniff',
        connection: 'keep-alive',
      })
      // retry: how long EventSource waits before reconnecting (§9.2.6): no faster than 1 s.
      res.write('retry: 2000\n\n')
      const c: Client = { res, topics, owner }
      clients.add(c)
      const drop = (): void => {
        clients.delete(c)
      }
      req.raw.on('close', drop)
      res.on('close', drop)
    },
    drop(owner) {
      for (const c of clients)
        if (c.owner === owner) {
          clients.delete(c)
          c.res.end()
        }
    },
    clients: () => clients.size,
    close() {
      clearInterval(keepalive)
      for (const c of clients) c.res.end()
      clients.clear()
    },
  }
}
