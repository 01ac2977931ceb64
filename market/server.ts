// Loading market.toml and starting the market on its port: what `svc market` runs.
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { chainFilePath } from '../chain/chain-file.ts'
import { fail } from '../errors/codes.ts'
import { errorText } from '../errors/text.ts'
import { buildMarketApp, type MarketApp, type MarketAppOptions } from './app.ts'
import { isLoopbackHost } from '../net/loopback.ts'
import {
  type ConfigResult,
  type MarketConfig,
  defaultConfig,
  parseMarketConfig,
  resolveChain,
  storeUrlProblem,
} from './config.ts'

export interface LoadOptions {
  /** market.toml; when absent, `<home>/market.toml` is read if it exists, else the defaults. */
  file?: string
  /** SVC_HOME: default data dir `<home>/market`, default chain file `<home>/chain.json`. */
  home: string
  /** The environment to read SVC_MARKET_STORE from (default: none). */
  env?: NodeJS.ProcessEnv
}

export async function loadMarketConfig(o: LoadOptions): Promise<ConfigResult> {
  const file = o.file ?? join(o.home, 'market.toml')
  let text: string | null = null
  try {
    text = await readFile(file, 'utf8')
  } catch (err) {
    // Only a file the operator named must exist: the default one may be absent.
    if (o.file !== undefined)
      return (err as NodeJS.ErrnoException).code === 'ENOENT'
        ? fail('NOT_FOUND', `${file}: not found`)
        : fail('IO_FAILED', `${file}: ${errorText(err)}`)
  }
  const defaultDataDir = join(o.home, 'market')
  const parsed: ConfigResult =
    text === null
      ? { ok: true, config: defaultConfig(defaultDataDir) }
      : parseMarketConfig(text, file, defaultDataDir)
  if (!parsed.ok) return parsed
  // The database URL may carry a password: it can come from the environment instead of the file.
  const env = o.env?.SVC_MARKET_STORE
  if (env) {
    const problem = storeUrlProblem(env)
    if (problem) return fail('BAD_CONFIG', `SVC_MARKET_STORE ${problem}`)
    parsed.config.storeUrl = env
  }
  return resolveChain(parsed.config, chainFilePath(o.home))
}

export interface RunningMarket extends MarketApp {
  url: string
}

/**
 * Off loopback the listen address is not a name browsers use, so the SIWE domain and origin must
 * come from `publicUrl`; without it the market does not start (one line naming the fix).
 */
export function publicUrlProblem(config: MarketConfig): string | null {
  if (config.publicUrl !== null || isLoopbackHost(config.host)) return null
  return `market: host ${config.host} is not loopback: set publicUrl = "https://<your market's name>" in market.toml (the sign-in domain)`
}

/** Checks the RPC serves the configured chain id, then listens. */
export async function startMarketServer(
  config: MarketConfig,
  opts: Omit<MarketAppOptions, 'config'> = {},
): Promise<RunningMarket> {
  const problem = publicUrlProblem(config)
  if (problem) throw new Error(problem)
  const m = await buildMarketApp({ ...opts, config })
  try {
    const id = await m.ctx.chain.chainId()
    if (!id.ok) throw new Error(`chain ${config.chain!.rpcUrl} unreachable: ${id.error}`)
    if (id.value !== config.chain!.chainId)
      throw new Error(
        `chain ${config.chain!.rpcUrl} has chain id ${id.value}, expected ${config.chain!.chainId}`,
      )
    const address = await m.app.listen({ host: config.host, port: config.port })
    return { ...m, url: address }
  } catch (err) {
    await m.close()
    throw err
  }
}
