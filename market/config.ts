// market.toml: checked against its settings' table (config-schema.ts) as hub.toml is against
// its own, every default taken from it. A bad value is reported as `<file>: <field>: <problem>`
// and the market does not start.
import { dirname, isAbsolute, join, resolve } from 'node:path'
import type { XStatic } from 'typebox/schema'
import { type Address, getAddress } from 'viem'
import { type ChainInfo, readChainFile } from '../chain/chain-file.ts'
import { camelCase } from '../config/keys.ts'
import { schemaErrors } from '../config/schema-errors.ts'
import { type Resolved, resolveSection } from '../config/sections.ts'
import { parseTomlDoc } from '../config/toml.ts'
import { type Result, fail } from '../errors/codes.ts'
import { MarketTomlSchema } from './config-schema.ts'

type MarketToml = XStatic<typeof MarketTomlSchema>
const P = MarketTomlSchema.properties
type RateLimits = typeof P.rateLimit.properties

/** `[rateLimit.<route>]`. */
export type RateLimit = Resolved<RateLimits[keyof RateLimits]>

export interface MarketChainConfig {
  rpcUrl: string
  chainId: number
  identityRegistry: Address
  validationRegistry: Address
  /** <ATTESTOR_ADDRESS>: the only validator whose rows pass verify. */
  attestor: Address
  /** <PAYOUT_ADDRESS>: stored on each listing at creation; buyers pay here. */
  payout: Address
  /** Verify: rows per eth_call (or per JSON-RPC batch) and how many may be in flight. */
  batchSize: number
  concurrency: number
  /**
   * Dev chains only (the chain file names its anvil accounts): the funded buyer account the
   * website's "Buy on the local chain" guide gives. Absent on a real network.
   */
  devBuyer?: { address: Address; privateKey: string }
}

export interface MarketConfig {
  /** Line 1 of every signed message is `<displayName> marketplace`. */
  displayName: string
  host: string
  port: number
  /** Public origin (e.g. https://market.example). SIWE domain, CSRF origin and Secure cookies follow it. */
  publicUrl: string | null
  /** Trust X-Forwarded-* from a reverse proxy (needed for Secure cookies behind HTTPS). */
  trustProxy: boolean
  dataDir: string
  /**
   * `[store] url`: a PostgreSQL URL (postgres://…) for several market processes on one database;
   * null: LevelDB in `<dataDir>/market.db`. SVC_MARKET_STORE, when set, wins over the file.
   */
  storeUrl: string | null
  /** `[store] blocksDir`: the pinned files' blocks; instances sharing a database share this folder too. */
  blocksDir: string | null
  sessionSeconds: number
  /** Secret that signs the session cookie; when empty one is made and kept in `<dataDir>/cookie.secret`. */
  cookieSecret: string | null
  challengeSeconds: number
  /** Null until resolved: `[chain]` in the file, or the dev chain file written by `svc chain dev`. */
  chain: MarketChainConfig | null
  chainFile: string | null
  /** `[chain]` values given beside `file`; they win over the file's. */
  chainOverrides?: {
    attestor: Address | undefined
    payout: Address | undefined
    batchSize: number
    concurrency: number
  }
  ipfsApi: string | null
  /**
   * `[attestor]`: mount the attestor's routes in this market (as `svc start` does). Its key comes
   * from `keyFile`, else $SVC_ATTESTOR_KEY, else the dev chain file's attestor account.
   */
  attestor: { keyFile: string | null; uriBase: string | null } | null
  /** `[verify] intervalSeconds`: how often every listing is verified again in the background; 0 = never. */
  reverifySeconds: number
  samples: boolean
  /** A block explorer's origin (e.g. https://testnet.monadexplorer.com): receipts link `<explorerUrl>/tx/<hash>`. */
  explorerUrl: string | null
  rateLimits: {
    challenges: RateLimit
    keys: RateLimit
    verify: RateLimit
    purchase: RateLimit
    signIn: RateLimit
  }
}

/** The settings a market.toml with nothing in it gives; every default from the table. */
export function defaultConfig(dataDir: string): MarketConfig {
  const top = resolveSection(MarketTomlSchema, {}) as Resolved<typeof MarketTomlSchema>
  const { session, challenge, verify } = sections({})
  return {
    displayName: top.displayName,
    host: top.host,
    port: top.port,
    publicUrl: null,
    trustProxy: top.trustProxy,
    dataDir,
    storeUrl: null,
    blocksDir: null,
    sessionSeconds: session.lifetimeSeconds,
    cookieSecret: null,
    challengeSeconds: challenge.ttlSeconds,
    chain: null,
    chainFile: null,
    ipfsApi: null,
    attestor: null,
    reverifySeconds: verify.intervalSeconds,
    samples: top.samples,
    explorerUrl: null,
    rateLimits: rateLimits(undefined),
  }
}

/** The file's tables the market reads setting by setting, with their defaults. */
function sections(t: MarketToml) {
  return {
    session: resolveSection(P.session, t.session) as Resolved<typeof P.session>,
    challenge: resolveSection(P.challenge, t.challenge) as Resolved<typeof P.challenge>,
    verify: resolveSection(P.verify, t.verify) as Resolved<typeof P.verify>,
    chain: resolveSection(P.chain, t.chain) as Resolved<typeof P.chain>,
  }
}

/** Each route's limit: the file's `[rateLimit.<route>]` over the table's defaults. */
function rateLimits(t: MarketToml['rateLimit']): MarketConfig['rateLimits'] {
  const names = Object.keys(P.rateLimit.properties) as (keyof RateLimits)[]
  return Object.fromEntries(
    names.map((n) => [n, resolveSection(P.rateLimit.properties[n], t?.[n]) as RateLimit]),
  ) as MarketConfig['rateLimits']
}

export type ConfigResult = Result<{ config: MarketConfig }>

/** Why a store URL cannot be used (no password in the message), or null. */
export function storeUrlProblem(url: string): string | null {
  let u: URL
  try {
    u = new URL(url)
  } catch {
    return 'must be a postgres://user@host:port/database URL'
  }
  if (u.protocol !== 'postgres:' && u.protocol !== 'postgresql:')
    return `must be a postgres:// URL (got ${u.protocol}//…); omit it for the embedded LevelDB store`
  return null
}

/** An absolute http(s) URL, or null. */
function httpUrl(v: string): URL | null {
  try {
    const u = new URL(v)
    return u.protocol === 'http:' || u.protocol === 'https:' ? u : null
  } catch {
    return null
  }
}

/** Parse market.toml text. `file` is used in messages and to resolve relative paths. */
export function parseMarketConfig(text: string, file: string, defaultDataDir: string): ConfigResult {
  const parsed = parseTomlDoc(text, file)
  if (!parsed.ok) return parsed
  const errors = schemaErrors(MarketTomlSchema, parsed.doc, {
    // One spelling: a snake_case key gets the name market.toml knows it by.
    unknownHint: (key) => (key.includes('_') ? `market.toml keys are camelCase: ${camelCase(key)}` : null),
  })
  const refuse = (problems: string[]): ConfigResult => fail('BAD_CONFIG', `${file}: ${problems.join('; ')}`)
  if (errors.length > 0) return refuse(errors)
  const t = parsed.doc as MarketToml
  const base = dirname(resolve(file))
  const abs = (p: string): string => (isAbsolute(p) ? p : join(base, p))
  const c = defaultConfig(defaultDataDir)
  const top = resolveSection(MarketTomlSchema, t, {
    only: ['displayName', 'host', 'port', 'trustProxy', 'samples'],
  }) as Pick<MarketConfig, 'displayName' | 'host' | 'port' | 'trustProxy' | 'samples'>
  Object.assign(c, top)
  if (t.dataDir !== undefined) c.dataDir = abs(t.dataDir)
  // The schema checks the scheme; these check the rest of the URL.
  if (t.publicUrl !== undefined) {
    const u = httpUrl(t.publicUrl)
    if (!u) return refuse([`publicUrl: ${P.publicUrl.errorMessage}`])
    c.publicUrl = u.origin
  }
  if (t.explorerUrl !== undefined) {
    const u = httpUrl(t.explorerUrl)
    if (!u) return refuse([`explorerUrl: ${P.explorerUrl.errorMessage}`])
    c.explorerUrl = u.href.replace(/\/+$/, '')
  }
  if (t.store?.url !== undefined) {
    const problem = storeUrlProblem(t.store.url)
    if (problem) return refuse([`store.url: ${problem}`])
    c.storeUrl = t.store.url
  }
  if (t.store?.blocksDir !== undefined) c.blocksDir = abs(t.store.blocksDir)
  const { session, challenge, verify, chain } = sections(t)
  c.sessionSeconds = session.lifetimeSeconds
  c.cookieSecret = session.cookieSecret
  c.challengeSeconds = challenge.ttlSeconds
  c.reverifySeconds = verify.intervalSeconds
  c.ipfsApi = t.ipfs?.api ?? null
  if (t.attestor !== undefined)
    c.attestor = {
      keyFile: t.attestor.keyFile !== undefined ? abs(t.attestor.keyFile) : null,
      uriBase: t.attestor.uriBase ?? null,
    }
  if (t.chain !== undefined) {
    if (chain.file !== null) c.chainFile = abs(chain.file)
    const address = (a: string | null): Address | undefined => (a === null ? undefined : getAddress(a))
    if (chain.rpcUrl !== null) {
      const need = ['identityRegistry', 'validationRegistry', 'attestor', 'payout'] as const
      const missing = need.filter((k) => chain[k] === null)
      if (missing.length > 0)
        return refuse(missing.map((k) => `chain.${k}: required when chain.rpcUrl is set`))
      c.chain = {
        rpcUrl: chain.rpcUrl,
        chainId: chain.chainId,
        identityRegistry: getAddress(chain.identityRegistry as string),
        validationRegistry: getAddress(chain.validationRegistry as string),
        attestor: getAddress(chain.attestor as string),
        payout: getAddress(chain.payout as string),
        batchSize: chain.batchSize,
        concurrency: chain.concurrency,
      }
    } else if (chain.identityRegistry !== null || chain.validationRegistry !== null) {
      return refuse(['chain.rpcUrl: required when registry addresses are set'])
    }
    // Values set in [chain] beside `file` override the file's (e.g. a real payout address).
    c.chainOverrides = {
      attestor: address(chain.attestor),
      payout: address(chain.payout),
      batchSize: chain.batchSize,
      concurrency: chain.concurrency,
    }
  }
  c.rateLimits = rateLimits(t.rateLimit)
  return { ok: true, config: c }
}

/** Fill `config.chain` from the chain file (`svc chain dev`) when `[chain] rpcUrl` was not given. */
export async function resolveChain(config: MarketConfig, fallbackFile: string): Promise<ConfigResult> {
  if (config.chain) return { ok: true, config }
  const file = config.chainFile ?? fallbackFile
  const r = await readChainFile(file)
  if (!r.ok) return { ...r, error: `${r.error}; or set [chain] rpcUrl and the addresses in market.toml` }
  return chainFromInfo(config, r.value, file)
}

/** The market's chain settings from a chain file; `[chain]` values in market.toml win. */
export function chainFromInfo(config: MarketConfig, info: ChainInfo, file = 'chain file'): ConfigResult {
  const o = config.chainOverrides
  const payout = o?.payout ?? info.accounts?.payout.address
  if (!payout) return fail('BAD_CONFIG', `${file} names no payout account: set chain.payout in market.toml`)
  const chain: MarketChainConfig = {
    rpcUrl: info.rpcUrl,
    chainId: info.chainId,
    identityRegistry: getAddress(info.identityRegistry),
    validationRegistry: getAddress(info.validationRegistry),
    attestor: o?.attestor ?? getAddress(info.attestorAddress),
    payout: getAddress(payout),
    batchSize: o?.batchSize ?? P.chain.properties.batchSize.default,
    concurrency: o?.concurrency ?? P.chain.properties.concurrency.default,
    ...(info.accounts ? { devBuyer: { ...info.accounts.buyer } } : {}),
  }
  return { ok: true, config: { ...config, chain } }
}
