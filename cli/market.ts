// `svc market [--config market.toml]`: runs the marketplace server until Ctrl-C / SIGTERM.
import { isAbsolute, resolve } from 'node:path'
import type { FastifyPluginAsync } from 'fastify'
import { privateKeyToAddress } from 'viem/accounts'
import { chainFilePath, readChainFile } from '../chain/chain-file.ts'
import { preflightLine, runPreflight } from '../chain/preflight-reads.ts'
import { loadAttestorConfig } from '../market/attestor/config.ts'
import { attestorPreflight } from '../market/attestor/preflight.ts'
import { attestorRoutes } from '../market/attestor/mount.ts'
import type { MarketConfig } from '../market/config.ts'
import { intOption, parseOptions } from './options.ts'
import { marketPages } from '../market/pages/index.ts'
import { loadMarketConfig, publicUrlProblem, startMarketServer } from '../market/server.ts'
import { svcPaths } from '../hub/paths.ts'
import { type Command, EXIT_OK, UserError, UsageError, untilStopSignal } from './io.ts'
import { errorText } from '../errors/text.ts'

export const MARKET_HELP = `usage: svc market [options]

Runs the marketplace: SIWE sign-in, agent keys, listings, verify, purchase and file download
over HTTP, LevelDB storage and a content-addressed blockstore under the data dir, chain reads
against the configured RPC (by default the chain file written by \`svc chain dev\`). With
[store] url in market.toml, or $SVC_MARKET_STORE (postgres://…), the store is PostgreSQL and
several market processes may share it (market/README.md). With an
[attestor] table in market.toml it also serves the attestor (/api/attestor/…), as svc start
does; its key: [attestor] keyFile, else $SVC_ATTESTOR_KEY, else the dev chain file's.

options:
  --config FILE   market.toml (default: <SVC_HOME>/market.toml when it exists)
  --host H        listen address (overrides the config; default 127.0.0.1)
  --port N        port (overrides the config; default 8787, 0 = any free port)
  -h, --help      this help`

export const command: Command = async (argv, io) => {
  const { values, positionals } = parseOptions(
    argv,
    {
      config: { type: 'string' },
      host: { type: 'string' },
      port: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    'svc market --help',
  )
  if (values.help) {
    io.out(MARKET_HELP)
    return EXIT_OK
  }
  if (positionals.length > 0)
    throw new UsageError(`unexpected argument "${positionals[0]}" (see svc market --help)`)
  const port = intOption(values.port, 'port')
  const file =
    values.config === undefined
      ? undefined
      : isAbsolute(values.config)
        ? values.config
        : resolve(io.cwd, values.config)
  const loaded = await loadMarketConfig({
    home: svcPaths(io.env).home,
    env: io.env,
    ...(file ? { file } : {}),
  })
  if (!loaded.ok) throw new UserError(loaded.error)
  const config = {
    ...loaded.config,
    ...(values.host ? { host: values.host } : {}),
    ...(port !== undefined ? { port } : {}),
  }
  const noPublicUrl = publicUrlProblem(config)
  if (noPublicUrl) throw new UserError(noPublicUrl)
  // Preflight (chain/preflight.ts): a chain whose registries are not ERC-8004 would make every
  // listing fail verification for a reason no buyer could guess. A chain that does not answer is
  // left to the server's own start check, which names the RPC.
  const chain = config.chain!
  const pre = await runPreflight({
    rpcUrl: chain.rpcUrl,
    identityRegistry: chain.identityRegistry,
    validationRegistry: chain.validationRegistry,
  })
  if (!pre.ok && !pre.unreachable) throw new UserError(`market: ${preflightLine(pre)}`)
  for (const w of pre.warnings) io.err(`svc market: warning: ${w}`)
  const plugins: FastifyPluginAsync[] = []
  let attestorLine = ''
  if (config.attestor) {
    const a = await attestorFor(config, config.attestor, svcPaths(io.env).home, io.env)
    const checked = await attestorPreflight(a)
    if (!checked.ok) throw new UserError(checked.error)
    for (const w of checked.warnings) io.err(`svc market: warning: ${w}`)
    plugins.push(attestorRoutes(a))
    attestorLine = `; attestor ${privateKeyToAddress(a.privateKey)} at /api/attestor`
  }
  let running
  try {
    running = await startMarketServer(config, { pages: marketPages, plugins })
  } catch (err) {
    throw new UserError(errorText(err))
  }
  io.out(
    `market listening on ${running.url} (chain ${config.chain!.rpcUrl}, data ${config.dataDir}${attestorLine})`,
  )
  await untilStopSignal()
  await running.close()
  return EXIT_OK
}

/** The attestor for `[attestor]`: the market's own chain settings, so its rows are the ones verify accepts. */
async function attestorFor(
  config: MarketConfig,
  section: NonNullable<MarketConfig['attestor']>,
  home: string,
  env: NodeJS.ProcessEnv,
) {
  const chain = config.chain!
  // The dev chain file carries the dev attestor key: usable only when it describes this chain.
  const file = await readChainFile(config.chainFile ?? chainFilePath(home))
  const accounts = file.ok && file.value.rpcUrl === chain.rpcUrl ? file.value.accounts : undefined
  const r = await loadAttestorConfig({
    chain: {
      rpcUrl: chain.rpcUrl,
      identityRegistry: chain.identityRegistry,
      validationRegistry: chain.validationRegistry,
      attestorAddress: chain.attestor,
      ...(accounts ? { accounts } : {}),
      // Answers batched when the chain file names a batch executor for this very chain.
      ...(file.ok &&
      file.value.rpcUrl === chain.rpcUrl &&
      file.value.validationRegistry.toLowerCase() === chain.validationRegistry.toLowerCase() &&
      file.value.batchExecutor
        ? { batchExecutor: file.value.batchExecutor }
        : {}),
    },
    ...(section.keyFile ? { keyFile: section.keyFile } : {}),
    ...(section.uriBase ? { uriBase: section.uriBase } : {}),
    env,
  })
  if (!r.ok) throw new UserError(`[attestor]: ${r.error}`)
  return r.config
}
