// A hostile public RPC for tests: a JSON-RPC proxy on loopback in front of a real anvil that
// misbehaves on a seeded schedule, the way public endpoints do: 429 with Retry-After, 5xx,
// dropped connections, answers lost after the request reached the node, transactions accepted
// and never passed on (a pool that drops them), "nonce too low" and "replacement
// transaction underpriced" for transactions it never forwarded, base-fee jumps
// (anvil_setNextBlockBaseFeePerGas) and slow answers. Same seed, same schedule of decisions.
// Transactions have a schedule of their own: the n-th eth_sendRawTransaction through a proxy
// meets the same transaction fault on every run, however many reads and polls came between.
import { type IncomingMessage, type ServerResponse, createServer } from 'node:http'
import { type Hex, keccak256 } from 'viem'
import { seeded } from './seeded.ts'

export const FAULTS = [
  '429',
  '5xx',
  'drop',
  'timeout',
  'tx-dropped',
  'nonce-too-low',
  'underpriced',
  'basefee-jump',
  'slow',
] as const
export type Fault = (typeof FAULTS)[number]
/** Faults that only make sense for eth_sendRawTransaction. */
const TX_ONLY: ReadonlySet<Fault> = new Set(['tx-dropped', 'nonce-too-low', 'underpriced'])

export interface HostileOptions {
  /** The real node (anvil). */
  target: string
  seed: number
  /**
   * Chance per request of each fault (0..1); the first one drawn wins. A transaction draws the
   * transaction-only faults first, from their own stream, then the others.
   */
  rates: Partial<Record<Fault, number>>
  /** Retry-After seconds sent with a 429 (default 1). */
  retryAfterS?: number
  /** A "timeout" holds the answer this long, then drops the connection (default 4000 ms). */
  hangMs?: number
  /** Slow answers wait between these (default 100..800 ms). */
  slowMs?: [number, number]
  /** Base-fee jump factor (default 3). */
  baseFeeFactor?: number
}

export interface HostileRpc {
  url: string
  /** Faults injected so far, by kind; and requests seen. */
  counts: Record<Fault, number> & { requests: number }
  /** Stop misbehaving (the final check reads through it calmly). */
  calm(): void
  stop(): Promise<void>
}

interface RpcReq {
  id?: unknown
  method?: string
  params?: unknown[]
}

async function rpc(target: string, method: string, params: unknown[]): Promise<unknown> {
  const r = await fetch(target, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  })
  return ((await r.json()) as { result?: unknown }).result
}

export async function startHostileRpc(o: HostileOptions): Promise<HostileRpc> {
  const rand = seeded(o.seed)
  const txRand = seeded(o.seed ^ 0x5bd1e995)
  let rates = { ...o.rates }
  const counts = Object.fromEntries([...FAULTS.map((f) => [f, 0]), ['requests', 0]]) as HostileRpc['counts']
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
  const open = new Set<import('node:net').Socket>()

  function pick(reqs: RpcReq[]): Fault | undefined {
    const isTx = reqs.length === 1 && reqs[0]!.method === 'eth_sendRawTransaction'
    if (isTx) {
      // Draw for every transaction fault, so the n-th transaction's draws are always the same.
      let txFault: Fault | undefined
      for (const f of FAULTS) if (TX_ONLY.has(f) && txRand() < (rates[f] ?? 0)) txFault ??= f
      if (txFault) return txFault
    }
    for (const f of FAULTS) {
      if (TX_ONLY.has(f)) continue
      if (rand() < (rates[f] ?? 0)) return f
    }
    return undefined
  }

  async function forward(body: string): Promise<{ status: number; text: string }> {
    const r = await fetch(o.target, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
    return { status: r.status, text: await r.text() }
  }

  const error = (req: RpcReq, message: string) =>
    JSON.stringify({ jsonrpc: '2.0', id: req.id ?? null, error: { code: -32000, message } })

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = []
    for await (const c of req) chunks.push(c as Buffer)
    const body = Buffer.concat(chunks).toString()
    counts.requests++
    let parsed: RpcReq | RpcReq[]
    try {
      parsed = JSON.parse(body) as RpcReq | RpcReq[]
    } catch {
      res.writeHead(400).end()
      return
    }
    const reqs = Array.isArray(parsed) ? parsed : [parsed]
    const fault = pick(reqs)
    if (fault) counts[fault]++
    const reply = (status: number, text: string, headers: Record<string, string> = {}): void => {
      res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(text)
    }
    switch (fault) {
      case '429':
        return reply(429, JSON.stringify({ error: 'rate limited' }), {
          'retry-after': String(o.retryAfterS ?? 1),
        })
      case '5xx':
        return reply(rand() < 0.5 ? 502 : 503, JSON.stringify({ error: 'upstream' }))
      case 'drop':
        req.socket.destroy()
        return
      case 'timeout': {
        await forward(body) // it reached the node; the answer never comes back
        await sleep(o.hangMs ?? 4000)
        req.socket.destroy()
        return
      }
      case 'nonce-too-low':
        return reply(200, error(reqs[0]!, 'nonce too low'))
      case 'underpriced':
        return reply(200, error(reqs[0]!, 'replacement transaction underpriced'))
      case 'tx-dropped': {
        // Accepted with its hash, and never seen by the node: what a pool that drops it leaves.
        // Not forwarded and then dropped: on an interval-mining chain a block could take it in
        // between (a loaded CI host made that happen), and the fault would not be one.
        const raw = reqs[0]!.params?.[0]
        if (typeof raw !== 'string') return reply(200, error(reqs[0]!, 'invalid raw transaction'))
        return reply(
          200,
          JSON.stringify({ jsonrpc: '2.0', id: reqs[0]!.id ?? null, result: keccak256(raw as Hex) }),
        )
      }
      case 'basefee-jump': {
        const block = (await rpc(o.target, 'eth_getBlockByNumber', ['latest', false])) as {
          baseFeePerGas?: string
        }
        const base = BigInt(block?.baseFeePerGas ?? '0x3b9aca00')
        const next = base * BigInt(o.baseFeeFactor ?? 3) + 1n
        await rpc(o.target, 'anvil_setNextBlockBaseFeePerGas', [`0x${next.toString(16)}`])
        break
      }
      case 'slow': {
        const [lo, hi] = o.slowMs ?? [100, 800]
        await sleep(lo + Math.floor(rand() * (hi - lo)))
        break
      }
      default:
        break
    }
    const r = await forward(body)
    reply(r.status, r.text)
  }

  const server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(502).end()
      else res.destroy()
    })
  })
  server.on('connection', (s) => {
    open.add(s)
    s.on('close', () => open.delete(s))
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const addr = server.address()
  const port = typeof addr === 'object' && addr ? addr.port : 0
  return {
    url: `http://127.0.0.1:${port}`,
    counts,
    calm() {
      rates = {}
    },
    async stop() {
      for (const s of open) s.destroy()
      await new Promise<void>((r) => server.close(() => r()))
    },
  }
}
