// Test helpers: a real market on a free loopback port over a real dev chain, sign-in with a
// real SIWE signature, agent keys, datasets and listing uploads over HTTP.
import { join } from 'node:path'
import { type Hex, keccak256, toHex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { createSiweMessage } from 'viem/siwe'
import type { DevChain } from '../../chain/dev.ts'
import { buildMarketApp, type MarketApp, type MarketAppOptions } from '../../market/app.ts'
import { type MarketChain, viemMarketChain } from '../../market/chain/market-chain.ts'
import { chainFromInfo, defaultConfig, type MarketConfig } from '../../market/config.ts'
import { canonicalLine, lineHash } from '../../records/index.ts'
import { freePort } from '../helpers/ports.ts'
import { tempDir } from '../helpers/tmp.ts'
import { testStoreUrl } from './store-engine.ts'

export interface Running {
  url: string
  market: MarketApp
}

interface T {
  teardown(fn: () => unknown): void
}

export interface StartOptions {
  /** Change the chain file the market reads (e.g. a dead rpcUrl). */
  info?: Partial<DevChain['info']>
  /** Wrap the chain reads (e.g. to count them). */
  wrapChain?: (c: MarketChain) => MarketChain
  /** Mount the website (test/web). */
  pages?: MarketAppOptions['pages']
}

export async function startMarket(
  t: T,
  dev: DevChain,
  tweak?: (c: MarketConfig) => void,
  opts: StartOptions = {},
): Promise<Running> {
  const dir = await tempDir(t, 'svc-market-')
  const base = defaultConfig(join(dir, 'data'))
  base.samples = true
  // LevelDB in the data dir, or a fresh PostgreSQL database (store-engine.ts).
  base.storeUrl = await testStoreUrl()
  // Generous limits so only the rate-limit test trips them.
  for (const k of Object.keys(base.rateLimits) as (keyof MarketConfig['rateLimits'])[])
    base.rateLimits[k] = { max: 100_000, windowSeconds: 60 }
  tweak?.(base)
  const r = chainFromInfo(base, { ...dev.info, ...opts.info })
  if (!r.ok) throw new Error(r.error)
  const chain = opts.wrapChain ? opts.wrapChain(viemMarketChain(r.config.chain!)) : undefined
  const market = await buildMarketApp({
    config: r.config,
    ...(chain ? { chain } : {}),
    ...(opts.pages ? { pages: opts.pages } : {}),
  })
  const port = await freePort()
  await market.app.listen({ host: '127.0.0.1', port })
  t.teardown(() => market.close())
  return { url: `http://127.0.0.1:${port}`, market }
}

export async function api(
  url: string,
  path: string,
  init: { method?: string; body?: unknown; cookie?: string; headers?: Record<string, string> } = {},
) {
  const headers: Record<string, string> = { ...(init.headers ?? {}) }
  if (init.cookie) headers.cookie = init.cookie
  let body: string | undefined
  if (init.body !== undefined) {
    headers['content-type'] = 'application/json'
    body = JSON.stringify(init.body)
  }
  const res = await fetch(url + path, {
    method: init.method ?? (body ? 'POST' : 'GET'),
    headers,
    ...(body !== undefined ? { body } : {}),
  })
  const text = await res.text()
  let json: Record<string, unknown> = {}
  try {
    json = JSON.parse(text) as Record<string, unknown>
  } catch {
    json = { text }
  }
  return { status: res.status, json, headers: res.headers, text }
}

/** SIWE sign-in; returns the cookie header value for `svc_session`. */
export async function signIn(url: string, privateKey: Hex): Promise<string> {
  const account = privateKeyToAccount(privateKey)
  const n = await api(url, '/api/auth/nonce')
  const message = createSiweMessage({
    domain: new URL(url).host,
    address: account.address,
    chainId: 10143,
    nonce: n.json.nonce as string,
    uri: url,
    version: '1',
    statement: 'Sign in to the svc marketplace',
  })
  const signature = await account.signMessage({ message })
  const res = await fetch(url + '/api/auth/verify', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ message, signature }),
  })
  if (res.status !== 200) throw new Error(`sign-in failed: ${res.status} ${await res.text()}`)
  const set = res.headers.getSetCookie().find((c) => c.startsWith('svc_session='))
  if (!set) throw new Error('no svc_session cookie')
  return set.split(';')[0]!
}

export async function issueKey(
  url: string,
  cookie: string,
  walletKey: Hex,
  agentId: string,
): Promise<{ status: number; json: Record<string, unknown> }> {
  const wallet = privateKeyToAccount(walletKey)
  const ch = await api(url, '/api/marketplace/challenges', {
    body: { kind: 'key', agentId, wallet: wallet.address },
    cookie,
  })
  if (ch.status !== 201) return ch
  const signature = await wallet.signMessage({ message: ch.json.message as string })
  return api(url, '/api/marketplace/keys', { body: { challengeId: ch.json.id, signature }, cookie })
}

export interface Dataset {
  lines: string[]
  data: string
  requestHashes: Hex[]
  manifest: {
    version: number
    chainId: number
    agentId: string
    rows: { paramsHash: Hex; requestHash: Hex }[]
  }
}

let seq = 0
export function dataset(n: number, agentId: string, pad = 0): Dataset {
  const run = `${process.pid}-${Date.now()}-${seq++}`
  const lines = Array.from({ length: n }, (_, i) =>
    canonicalLine({ action: 'vend', i, run, ...(pad > 0 ? { pad: 'x'.repeat(pad) } : {}) }),
  )
  return datasetFrom(lines, agentId, run)
}

/** A dataset of the given canonical lines, with made-up request hashes unique to `run`. */
export function datasetFrom(
  lines: string[],
  agentId: string,
  run = `${process.pid}-${Date.now()}-${seq++}`,
): Dataset {
  const requestHashes = lines.map((l, i) => keccak256(toHex(`req:${run}:${i}:${l}`)))
  return {
    lines,
    data: lines.join('\n') + '\n',
    requestHashes,
    manifest: {
      version: 1,
      chainId: 10143,
      agentId,
      rows: lines.map((l, i) => ({ paramsHash: lineHash(l), requestHash: requestHashes[i]! })),
    },
  }
}

export const goodFields = {
  title: 'Snack machine vends, week 12',
  summary: 'Every vend of one snack machine for a week, attested line by line.',
  description: 'Operation lines from a vending machine, one JSON record per vend, each attested on chain.',
  machineType: 'vending',
  license: 'research',
  priceNative: '0.05',
}

export interface ListingParts {
  fields?: Record<string, string>
  manifest?: string | Uint8Array | null
  data?: string | Uint8Array | null
  image?: Uint8Array | null
  extra?: [string, string][]
}

export async function postListing(
  url: string,
  key: string | null,
  ds: Dataset | null,
  parts: ListingParts = {},
) {
  const form = new FormData()
  for (const [k, v] of Object.entries(parts.fields ?? goodFields)) form.append(k, v)
  const manifest = parts.manifest === undefined ? (ds ? JSON.stringify(ds.manifest) : null) : parts.manifest
  const data = parts.data === undefined ? (ds ? ds.data : null) : parts.data
  if (manifest !== null)
    form.append('manifest', new Blob([manifest as BlobPart], { type: 'application/json' }), 'manifest.json')
  if (data !== null)
    form.append('data', new Blob([data as BlobPart], { type: 'application/x-ndjson' }), 'operations.jsonl')
  if (parts.image) form.append('image', new Blob([parts.image as BlobPart]), 'cover.bin')
  for (const [k, v] of parts.extra ?? []) form.append(k, v)
  const headers: Record<string, string> = key ? { authorization: `Bearer ${key}` } : {}
  const res = await fetch(url + '/api/agent/listings', { method: 'POST', body: form, headers })
  const text = await res.text()
  let json: Record<string, unknown> = {}
  try {
    json = JSON.parse(text) as Record<string, unknown>
  } catch {
    json = { text }
  }
  return { status: res.status, json }
}
