// `[metrics] port`: GET /metrics on a listener of its own, for a Prometheus on another machine
// (or one on this machine that cannot read the hub's token file). It serves nothing else.
// Its credential is a bearer token, as the local API's, but a lasting one the owner writes to
// `token_file` (mode 0600), because the local API's token is replaced at each hub start and
// also approves runs, where this one only reads figures. Beyond loopback the token is required
// (config.ts refuses a start without it); on loopback it is optional, as the broker takes
// anonymous clients there. The token goes in the Authorization header only: a query string is
// never read, so a token put in a URL is refused like none.
import { createHash, timingSafeEqual } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { fail, failAt, type Result } from '../../errors/codes.ts'
import { errorText } from '../../errors/text.ts'
import type { Log } from '../log.ts'
import { readSecretFile } from '../secret-file.ts'
import type { Scrape } from './route.ts'

/** A token file is read again at most this often: a replaced token works within this time. */
export const TOKEN_REREAD_MS = 5000

export interface MetricsListenerOptions {
  host: string
  port: number
  /** The 0600 file holding the bearer token; null: no token asked (loopback only). */
  tokenFile: string | null
  scrape(): Promise<Scrape>
  log: Log
  now?: () => number
}

export interface MetricsListener {
  url: string
  close(): Promise<void>
}

/** The token in `file`, or what is wrong with the file, naming it and the fix. */
export async function readMetricsToken(file: string): Promise<Result<{ token: string }>> {
  const r = await readSecretFile(file, 'the metrics bearer token')
  if (!r.ok) return failAt('metrics.token_file: ', r)
  if (r.text === null) return fail('NOT_FOUND', `metrics.token_file: ${file} does not exist`)
  const token = r.text.trim()
  // RFC 6750 b64token characters; 16 at least, so a token cannot be guessed by trying.
  if (!/^[A-Za-z0-9\-._~+/]{16,4096}=*$/.test(token))
    return fail(
      'BAD_CONFIG',
      `metrics.token_file: ${file} must hold one token of 16 or more characters A-Z a-z 0-9 - . _ ~ + / (e.g. openssl rand -hex 32)`,
    )
  return { ok: true, token }
}

const digest = (s: string): Buffer => createHash('sha256').update(s).digest()

/** Constant-time, whatever the lengths: both sides are hashed to 32 bytes first. */
function sameToken(given: string, token: string): boolean {
  return timingSafeEqual(digest(given), digest(token))
}

function send(res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', ...headers })
  res.end(body)
}

export async function startMetricsListener(o: MetricsListenerOptions): Promise<MetricsListener> {
  const now = o.now ?? Date.now
  let cached: { token: string; at: number } | null = null
  let lastError = ''
  const token = async (): Promise<string | null> => {
    if (o.tokenFile === null) return null
    if (cached && now() - cached.at < TOKEN_REREAD_MS) return cached.token
    const r = await readMetricsToken(o.tokenFile)
    if (!r.ok) throw new Error(r.error)
    cached = { token: r.token, at: now() }
    return r.token
  }
  // A file that cannot be used stops the start, with the field named.
  await token()

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? '').split('?')[0]
    if (path !== '/metrics')
      return send(res, 404, `no route ${req.method} ${path}: this listener serves GET /metrics\n`)
    if (req.method !== 'GET' && req.method !== 'HEAD')
      return send(res, 405, 'GET /metrics only\n', { allow: 'GET, HEAD' })
    let want: string | null
    try {
      want = await token()
    } catch (err) {
      const msg = errorText(err)
      if (msg !== lastError)
        o.log.error(
          { err: msg },
          'metrics listener cannot read its token file; scrapes fail until it is fixed',
        )
      lastError = msg
      return send(res, 500, 'the metrics token file cannot be read (see the hub log)\n')
    }
    if (want !== null) {
      const h = req.headers.authorization
      const m = typeof h === 'string' ? /^Bearer +(\S+) *$/i.exec(h) : null
      if (!m || !sameToken(m[1] as string, want))
        return send(
          res,
          401,
          m
            ? 'bad bearer token\n'
            : 'missing bearer token (Authorization: Bearer <token from metrics.token_file>)\n',
          {
            'www-authenticate': 'Bearer realm="svc hub metrics"',
          },
        )
    }
    const s = await o.scrape()
    res.writeHead(200, { 'content-type': s.contentType })
    res.end(req.method === 'HEAD' ? undefined : s.body)
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      o.log.error({ err: errorText(err) }, 'metrics scrape failed')
      if (!res.headersSent) send(res, 500, 'metrics scrape failed (see the hub log)\n')
      else res.destroy()
    })
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(o.port, o.host, () => {
      server.off('error', reject)
      resolve()
    })
  })
  const a = server.address() as AddressInfo
  const host = a.family === 'IPv6' ? `[${a.address}]` : a.address
  return {
    url: `http://${host}:${a.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}
