// market.toml: every setting with its default. A bad value is reported as `<file>: <field> …`
// and the market does not start.
import { dirname, isAbsolute, join, resolve } from 'node:path'
import { parse } from 'smol-toml'
import { type Address, getAddress, isAddress } from 'viem'
import { type ChainInfo, readChainFile } from '../chain/chain-file.ts'
import { CHAIN_ID } from '../chain/chain-id.ts'

export interface RateLimit {
  max: number
  windowSeconds: number
}

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

export function defaultConfig(dataDir: string): MarketConfig {
  return {
    displayName: 'svc',
    host: '127.0.0.1',
    port: 8787,
    publicUrl: null,
    trustProxy: false,
    dataDir,
    storeUrl: null,
    blocksDir: null,
    sessionSeconds: 7 * 24 * 3600,
    cookieSecret: null,
    challengeSeconds: 600,
    chain: null,
    chainFile: null,
    ipfsApi: null,
    attestor: null,
    reverifySeconds: 600,
    samples: true,
    explorerUrl: null,
    rateLimits: {
      challenges: { max: 20, windowSeconds: 60 },
      keys: { max: 20, windowSeconds: 60 },
      verify: { max: 30, windowSeconds: 60 },
      purchase: { max: 30, windowSeconds: 60 },
      signIn: { max: 30, windowSeconds: 60 },
    },
  }
}

export type ConfigResult = { ok: true; config: MarketConfig } | { ok: false; error: string }

type Table = Record<string, unknown>
const isTable = (v: unknown): v is Table => typeof v === 'object' && v !== null && !Array.isArray(v)

class ConfigError extends Error {}

function str(t: Table, key: string, where: string): string | undefined {
  const v = t[key]
  if (v === undefined) return undefined
  if (typeof v !== 'string' || v.length === 0)
    throw new ConfigError(`${where}${key} must be a non-empty string`)
  return v
}
function int(t: Table, key: string, where: string, min: number, max: number): number | undefined {
  const v = t[key]
  if (v === undefined) return undefined
  const n = typeof v === 'bigint' ? Number(v) : v
  if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > max)
    throw new ConfigError(`${where}${key} must be an integer from ${min} to ${max}`)
  return n
}
function bool(t: Table, key: string, where: string): boolean | undefined {
  const v = t[key]
  if (v === undefined) return undefined
  if (typeof v !== 'boolean') throw new ConfigError(`${where}${key} must be true or false`)
  return v
}
function addr(t: Table, key: string, where: string): Address | undefined {
  const v = str(t, key, where)
  if (v === undefined) return undefined
  if (!isAddress(v, { strict: false })) throw new ConfigError(`${where}${key} must be a 0x address`)
  return getAddress(v)
}
function checkKeys(t: Table, allowed: string[], where: string): void {
  for (const k of Object.keys(t))
    if (!allowed.includes(k)) throw new ConfigError(`${where}${k} is not a known setting`)
}

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

/** Parse market.toml text. `file` is used in messages and to resolve relative paths. */
export function parseMarketConfig(text: string, file: string, defaultDataDir: string): ConfigResult {
  let doc: Table
  try {
    doc = parse(text) as Table
  } catch (err) {
    return { ok: false, error: `${file}: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}` }
  }
  try {
    const base = dirname(resolve(file))
    const abs = (p: string): string => (isAbsolute(p) ? p : join(base, p))
    const c = defaultConfig(defaultDataDir)
    checkKeys(
      doc,
      [
        'displayName',
        'host',
        'port',
        'publicUrl',
        'trustProxy',
        'dataDir',
        'store',
        'session',
        'challenge',
        'chain',
        'ipfs',
        'attestor',
        'verify',
        'samples',
        'explorerUrl',
        'rateLimit',
      ],
      '',
    )
    c.displayName = str(doc, 'displayName', '') ?? c.displayName
    if (/[\r\n]/.test(c.displayName)) throw new ConfigError('displayName must be one line')
    c.host = str(doc, 'host', '') ?? c.host
    c.port = int(doc, 'port', '', 0, 65535) ?? c.port
    const pub = str(doc, 'publicUrl', '')
    if (pub !== undefined) {
      let u: URL
      try {
        u = new URL(pub)
      } catch {
        throw new ConfigError('publicUrl must be an absolute http(s) URL')
      }
      if (u.protocol !== 'http:' && u.protocol !== 'https:')
        throw new ConfigError('publicUrl must be an absolute http(s) URL')
      c.publicUrl = u.origin
    }
    c.trustProxy = bool(doc, 'trustProxy', '') ?? c.trustProxy
    const dd = str(doc, 'dataDir', '')
    if (dd) c.dataDir = abs(dd)
    c.samples = bool(doc, 'samples', '') ?? c.samples
    if (doc.store !== undefined) {
      if (!isTable(doc.store)) throw new ConfigError('[store] must be a table')
      checkKeys(doc.store, ['url', 'blocksDir'], 'store.')
      const url = str(doc.store, 'url', 'store.')
      if (url !== undefined) {
        const problem = storeUrlProblem(url)
        if (problem) throw new ConfigError(`store.url ${problem}`)
        c.storeUrl = url
      }
      const blocks = str(doc.store, 'blocksDir', 'store.')
      if (blocks) c.blocksDir = abs(blocks)
    }
    const explorer = str(doc, 'explorerUrl', '')
    if (explorer !== undefined) {
      let u: URL | null = null
      try {
        u = new URL(explorer)
      } catch {
        // reported below
      }
      if (!u || (u.protocol !== 'http:' && u.protocol !== 'https:'))
        throw new ConfigError(
          'explorerUrl must be an absolute http(s) URL, like https://testnet.monadexplorer.com',
        )
      c.explorerUrl = u.href.replace(/\/+$/, '')
    }
    if (doc.session !== undefined) {
      if (!isTable(doc.session)) throw new ConfigError('[session] must be a table')
      checkKeys(doc.session, ['lifetimeSeconds', 'cookieSecret'], 'session.')
      c.sessionSeconds =
        int(doc.session, 'lifetimeSeconds', 'session.', 60, 366 * 24 * 3600) ?? c.sessionSeconds
      c.cookieSecret = str(doc.session, 'cookieSecret', 'session.') ?? null
      if (c.cookieSecret !== null && c.cookieSecret.length < 32)
        throw new ConfigError('session.cookieSecret must be at least 32 characters')
    }
    if (doc.challenge !== undefined) {
      if (!isTable(doc.challenge)) throw new ConfigError('[challenge] must be a table')
      checkKeys(doc.challenge, ['ttlSeconds'], 'challenge.')
      c.challengeSeconds = int(doc.challenge, 'ttlSeconds', 'challenge.', 10, 24 * 3600) ?? c.challengeSeconds
    }
    if (doc.ipfs !== undefined) {
      if (!isTable(doc.ipfs)) throw new ConfigError('[ipfs] must be a table')
      checkKeys(doc.ipfs, ['api'], 'ipfs.')
      c.ipfsApi = str(doc.ipfs, 'api', 'ipfs.') ?? null
    }
    if (doc.verify !== undefined) {
      if (!isTable(doc.verify)) throw new ConfigError('[verify] must be a table')
      checkKeys(doc.verify, ['intervalSeconds'], 'verify.')
      c.reverifySeconds = int(doc.verify, 'intervalSeconds', 'verify.', 0, 7 * 24 * 3600) ?? c.reverifySeconds
    }
    if (doc.attestor !== undefined) {
      if (!isTable(doc.attestor)) throw new ConfigError('[attestor] must be a table')
      checkKeys(doc.attestor, ['keyFile', 'uriBase'], 'attestor.')
      const keyFile = str(doc.attestor, 'keyFile', 'attestor.')
      c.attestor = {
        keyFile: keyFile ? abs(keyFile) : null,
        uriBase: str(doc.attestor, 'uriBase', 'attestor.') ?? null,
      }
    }
    if (doc.chain !== undefined) {
      const t = doc.chain
      if (!isTable(t)) throw new ConfigError('[chain] must be a table')
      checkKeys(
        t,
        [
          'file',
          'rpcUrl',
          'chainId',
          'identityRegistry',
          'validationRegistry',
          'attestor',
          'payout',
          'batchSize',
          'concurrency',
        ],
        'chain.',
      )
      const f = str(t, 'file', 'chain.')
      if (f) c.chainFile = abs(f)
      const rpcUrl = str(t, 'rpcUrl', 'chain.')
      const batchSize = int(t, 'batchSize', 'chain.', 1, 5000) ?? 500
      const concurrency = int(t, 'concurrency', 'chain.', 1, 64) ?? 2
      if (rpcUrl !== undefined) {
        const need = (k: string): Address => {
          const v = addr(t, k, 'chain.')
          if (!v) throw new ConfigError(`chain.${k} is required when chain.rpcUrl is set`)
          return v
        }
        c.chain = {
          rpcUrl,
          chainId: int(t, 'chainId', 'chain.', 1, Number.MAX_SAFE_INTEGER) ?? CHAIN_ID,
          identityRegistry: need('identityRegistry'),
          validationRegistry: need('validationRegistry'),
          attestor: need('attestor'),
          payout: need('payout'),
          batchSize,
          concurrency,
        }
      } else if (t.identityRegistry !== undefined || t.validationRegistry !== undefined) {
        throw new ConfigError('chain.rpcUrl is required when registry addresses are set')
      }
      // Values set in [chain] beside `file` override the file's (e.g. a real payout address).
      c.chainOverrides = {
        attestor: addr(t, 'attestor', 'chain.'),
        payout: addr(t, 'payout', 'chain.'),
        batchSize,
        concurrency,
      }
    }
    if (doc.rateLimit !== undefined) {
      if (!isTable(doc.rateLimit)) throw new ConfigError('[rateLimit] must be a table')
      checkKeys(doc.rateLimit, Object.keys(c.rateLimits), 'rateLimit.')
      for (const name of Object.keys(c.rateLimits) as (keyof MarketConfig['rateLimits'])[]) {
        const r = doc.rateLimit[name]
        if (r === undefined) continue
        if (!isTable(r)) throw new ConfigError(`[rateLimit.${name}] must be a table`)
        checkKeys(r, ['max', 'windowSeconds'], `rateLimit.${name}.`)
        c.rateLimits[name] = {
          max: int(r, 'max', `rateLimit.${name}.`, 1, 1_000_000) ?? c.rateLimits[name].max,
          windowSeconds:
            int(r, 'windowSeconds', `rateLimit.${name}.`, 1, 86_400) ?? c.rateLimits[name].windowSeconds,
        }
      }
    }
    return { ok: true, config: c }
  } catch (err) {
    if (err instanceof ConfigError) return { ok: false, error: `${file}: ${err.message}` }
    throw err
  }
}

/** Fill `config.chain` from the chain file (`svc chain dev`) when `[chain] rpcUrl` was not given. */
export async function resolveChain(config: MarketConfig, fallbackFile: string): Promise<ConfigResult> {
  if (config.chain) return { ok: true, config }
  const file = config.chainFile ?? fallbackFile
  const r = await readChainFile(file)
  if (!r.ok) return { ok: false, error: `${r.error}; or set [chain] rpcUrl and the addresses in market.toml` }
  return chainFromInfo(config, r.value, file)
}

/** The market's chain settings from a chain file; `[chain]` values in market.toml win. */
export function chainFromInfo(config: MarketConfig, info: ChainInfo, file = 'chain file'): ConfigResult {
  const o = config.chainOverrides
  const payout = o?.payout ?? info.accounts?.payout.address
  if (!payout) return { ok: false, error: `${file} names no payout account: set chain.payout in market.toml` }
  const chain: MarketChainConfig = {
    rpcUrl: info.rpcUrl,
    chainId: info.chainId,
    identityRegistry: getAddress(info.identityRegistry),
    validationRegistry: getAddress(info.validationRegistry),
    attestor: o?.attestor ?? getAddress(info.attestorAddress),
    payout: getAddress(payout),
    batchSize: o?.batchSize ?? 500,
    concurrency: o?.concurrency ?? 2,
    ...(info.accounts ? { devBuyer: { ...info.accounts.buyer } } : {}),
  }
  return { ok: true, config: { ...config, chain } }
}
