// `svc start` (`npm start`): the whole product on one machine, for a first look.
// Starts in the order data flows back from the chain: anvil + registries, the market with the
// attestor mounted (and the website when built), the device's market key (issued the way a user
// would: SIWE sign-in, key challenge, owner signature), then the hub with a simulated vending
// board and the example SOPs. The demo approves the checkpoint step (saying so), waits for
// attested lines and lists them. SIGINT/SIGTERM stop everything in reverse order, anvil by pid.
import { existsSync } from 'node:fs'
import { isAbsolute, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import type { FastifyPluginAsync } from 'fastify'
import { chainFilePath } from '../chain/chain-file.ts'
import { writeChainFile } from '../hub/files/chain-file.ts'
import { enrolDevice, keptChain, startDevChain } from '../chain/dev.ts'
import { buildMarketApp } from '../market/app.ts'
import { loadAttestorConfig } from '../market/attestor/config.ts'
import { attestorRoutes } from '../market/attestor/mount.ts'
import { chainFromInfo, defaultConfig } from '../market/config.ts'
import type { MarketContext } from '../market/context.ts'
import type { AttestStore } from '../hub/attest/store.ts'
import { loadOrCreateDeviceKey, readDeviceKey } from '../hub/attest/device-key.ts'
import { intOption, parseOptions } from './options.ts'
import { loadConfig } from '../hub/daemon/config.ts'
import type { AttestationParts, HubParts } from '../hub/daemon/parts.ts'
import { type RunningHub, startHub } from '../hub/daemon/hub.ts'
import { createLog } from '../hub/log.ts'
import { realParts } from '../hub/daemon/real-parts.ts'
import { queueDemoListing, sleep } from '../hub/listing/demo.ts'
import { issueMarketKey } from '../hub/listing/issue-key.ts'
import { saveKey } from '../hub/listing/market-key.ts'
import { loadEntry } from '../hub/listing/queue.ts'
import type { ListingSyncLoop } from '../hub/listing/sync.ts'
import { svcPaths } from '../hub/paths.ts'
import { type CliIo, type Command, EXIT_OK, UsageError, UserError } from './io.ts'
import { errorText } from '../errors/text.ts'

export const START_HELP = `usage: svc start [options]     (npm start)

Runs everything locally: anvil (chain id 10143) with the registries, the market with the
attestor and the website, the hub with a simulated vending board "vend1" and the example SOPs.
The demo approves the vending-dispense checkpoint automatically (a real operator uses
svc sop approve <run>), and once 3 lines are attested it lists them on the market and prints
the listing's URL. Ctrl-C stops everything.

options:
  --port-base N      ports N (chain RPC), N+1 (market), N+2 (MQTT), N+3 (hub API), N+4 (webhooks),
                     N+5 (hub console)
  --rpc-port N --market-port N --mqtt-port N --api-port N --webhook-port N --console-port N
                     one port each (default: free ports)
  --sops DIR         SOP directories to load (default: the examples in sops/examples)
  --lines N          attested lines before the demo lists them (default 3)
  --no-demo          no automatic approval and no listing
  --fresh            start a new chain (the kept one in $SVC_HOME/chain is thrown away)
  --log-level LEVEL  the hub's log level (default warn)
  -h, --help         this help

State lives in $SVC_HOME (default ~/.svc), the dev chain too: a restart keeps every registry
row, agent and payment.`

const SPEC = {
  'port-base': { type: 'string' },
  'rpc-port': { type: 'string' },
  'market-port': { type: 'string' },
  'mqtt-port': { type: 'string' },
  'api-port': { type: 'string' },
  'webhook-port': { type: 'string' },
  'console-port': { type: 'string' },
  sops: { type: 'string' },
  lines: { type: 'string' },
  'no-demo': { type: 'boolean' },
  fresh: { type: 'boolean' },
  'log-level': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const

const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const
type Level = (typeof LEVELS)[number]

export interface StartPorts {
  rpc: number
  market: number
  mqtt: number
  api: number
  webhook: number
  console: number
}

export function portsFrom(
  v: Partial<
    Record<
      'port-base' | 'rpc-port' | 'market-port' | 'mqtt-port' | 'api-port' | 'webhook-port' | 'console-port',
      string
    >
  >,
): StartPorts {
  const base = intOption(v['port-base'], 'port-base', 1)
  if (base !== undefined && base + 5 > 65535)
    throw new UsageError(`--port-base must leave room for 6 ports (at most 65530, got ${base})`)
  const one = (
    name: 'rpc-port' | 'market-port' | 'mqtt-port' | 'api-port' | 'webhook-port' | 'console-port',
    offset: number,
  ): number => {
    const p = intOption(v[name], name)
    if (p !== undefined && p > 65535)
      throw new UsageError(`--${name} must be a port from 0 to 65535 (got ${p})`)
    return p ?? (base !== undefined ? base + offset : 0)
  }
  return {
    rpc: one('rpc-port', 0),
    market: one('market-port', 1),
    mqtt: one('mqtt-port', 2),
    api: one('api-port', 3),
    webhook: one('webhook-port', 4),
    console: one('console-port', 5),
  }
}

/** The website (market/pages), when that part of the product is present in this tree. */
async function loadPages(): Promise<((ctx: MarketContext) => FastifyPluginAsync) | undefined> {
  const file = fileURLToPath(new URL('../market/pages/index.ts', import.meta.url))
  if (!existsSync(file)) return undefined
  const mod = (await import(pathToFileURL(file).href)) as {
    marketPages?: (ctx: MarketContext) => FastifyPluginAsync
  }
  return mod.marketPages
}

type Closer = { name: string; fn: () => Promise<unknown> }
type ListingParts = AttestationParts & { store?: AttestStore; listings?: () => ListingSyncLoop | null }

export const command: Command = async (argv, io) => {
  const { values, positionals } = parseOptions(argv, SPEC, 'svc start --help')
  if (values.help) {
    io.out(START_HELP)
    return EXIT_OK
  }
  if (positionals.length > 0)
    throw new UsageError(`unexpected argument "${positionals[0]}" (see svc start --help)`)
  const ports = portsFrom(values)
  const minLines = intOption(values.lines, 'lines', 1) ?? 3
  const level = (values['log-level'] ?? 'warn') as Level
  if (!LEVELS.includes(level)) throw new UsageError(`--log-level: must be one of ${LEVELS.join(', ')}`)
  const sopsDir = values.sops
    ? isAbsolute(values.sops)
      ? values.sops
      : resolve(io.cwd, values.sops)
    : fileURLToPath(new URL('../sops/examples', import.meta.url))
  if (!existsSync(sopsDir)) throw new UsageError(`--sops: ${sopsDir} does not exist`)

  const stop = new AbortController()
  let signals = 0
  const onSignal = (sig: NodeJS.Signals): void => {
    if (++signals > 1) {
      io.err(`${sig} again: exiting now`)
      process.exit(130)
    }
    io.out(`${sig}: stopping (hub, market, chain)…`)
    stop.abort()
  }
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)
  const closers: Closer[] = []
  let failure: unknown = null
  try {
    await run({
      io,
      ports,
      minLines,
      level,
      sopsDir,
      demo: !values['no-demo'],
      fresh: values.fresh === true,
      signal: stop.signal,
      closers,
    })
  } catch (err) {
    failure = err
    stop.abort()
  } finally {
    for (const c of closers.splice(0).reverse()) {
      try {
        await c.fn()
      } catch (err) {
        io.err(`${c.name} did not stop cleanly: ${errorText(err)}`)
      }
    }
    process.off('SIGINT', onSignal)
    process.off('SIGTERM', onSignal)
  }
  if (failure !== null) {
    if (failure instanceof UserError) throw failure
    const e = failure as NodeJS.ErrnoException
    throw new UserError(
      `could not start: ${e.code === 'EADDRINUSE' ? `a port is already in use (${e.message}); pick others with --port-base N` : e.message}`,
    )
  }
  io.out('stopped.')
  return EXIT_OK
}

interface RunInput {
  io: CliIo
  ports: StartPorts
  minLines: number
  level: Level
  sopsDir: string
  demo: boolean
  fresh: boolean
  signal: AbortSignal
  closers: Closer[]
}

async function run(r: RunInput): Promise<void> {
  const { io, signal, closers } = r
  const env = io.env
  const paths = svcPaths(env)
  const host = '127.0.0.1'
  io.out(`state dir  ${paths.home}`)

  const chain = await startDevChain({ port: r.ports.rpc, host, ...(await keptChain(paths.home, r.fresh)) })
  closers.push({ name: 'chain', fn: () => chain.stop() })
  io.out(`chain      ${chain.kept ? 'kept from the last run' : 'new'} (${chain.rpcUrl})`)
  if (signal.aborted) return
  // The hub's own device key is the agent's wallet and operator (as `svc chain dev` does).
  await loadOrCreateDeviceKey(paths.deviceKey)
  await enrolDevice(chain.info as Required<typeof chain.info>, (await readDeviceKey(paths.deviceKey))!)

  const attestorCfg = await loadAttestorConfig({ chain: chain.info, env })
  if (!attestorCfg.ok) throw new UserError(attestorCfg.error)
  const mc = chainFromInfo(
    { ...defaultConfig(join(paths.home, 'market')), host, port: r.ports.market },
    chain.info,
  )
  if (!mc.ok) throw new UserError(mc.error)
  const pages = await loadPages()
  const market = await buildMarketApp({
    config: mc.config,
    plugins: [attestorRoutes(attestorCfg.config)],
    ...(pages ? { pages } : {}),
  })
  closers.push({ name: 'market', fn: () => market.close() })
  const marketUrl = await market.app.listen({ host, port: r.ports.market })
  const info = { ...chain.info, attestorUrl: marketUrl }
  await writeChainFile(chainFilePath(paths.home), info)
  if (signal.aborted) return

  const key = await issueMarketKey(marketUrl, chain.accounts.owner.privateKey, chain.agentId)
  if (!key.ok) throw new Error(`issuing the device's market key: ${key.error}`)
  await saveKey(env, key.key, marketUrl)
  if (signal.aborted) return

  const loaded = await loadConfig(undefined, env)
  if (!loaded.ok) throw new UserError(loaded.error)
  const config = loaded.config
  config.sopsDir = r.sopsDir
  config.logLevel = r.level
  config.broker.url = null
  config.broker.port = r.ports.mqtt
  config.api.port = r.ports.api
  config.webhook.port = r.ports.webhook
  config.console.port = r.ports.console
  config.chain = {
    rpc_url: info.rpcUrl,
    validation_registry: info.validationRegistry,
    agent_id: info.agentId,
    attestor_address: info.attestorAddress,
    attestor_url: marketUrl,
    ...(info.batchExecutor ? { batch_executor: info.batchExecutor } : {}),
  }
  if (!config.boards.some((b) => b.name === 'vend1'))
    config.boards.push({ name: 'vend1', port: '/dev/svc-sim-vend1', simulate: true })
  // Keep a handle on the attestation parts: the demo lists from the hub's own store.
  const base = realParts(env, config)
  let extras: ListingParts | null = null
  let sessionStart = 0
  const parts: HubParts = {
    ...base,
    attestation: async (o) => {
      extras = (await base.attestation!(o)) as ListingParts
      // Before the engine runs: lines from here on belong to this session's chain.
      sessionStart = extras.store?.size() ?? 0
      return extras
    },
  }
  const hub: RunningHub = await startHub(config, createLog(r.level), parts)
  closers.push({ name: 'hub', fn: () => hub.close() })

  io.out(
    [
      `chain RPC  ${info.rpcUrl}  (anvil pid ${chain.pid}, chain id ${info.chainId}; registries ${info.identityRegistry}, ${info.validationRegistry})`,
      `market     ${marketUrl}/  (website${pages ? '' : ' not built in this tree; API only'}; API at /api, attestor at /api/attestor)`,
      `hub API    ${hub.apiUrl ?? 'off'}  (local API; token in ${paths.apiToken})`,
      `MQTT       ${hub.brokerUrl}  (board events on boards/vend1/<signal>)`,
      `webhooks   ${hub.webhookUrl ?? 'off'}`,
      `console    ${hub.console ? `${hub.console.url}  (sign in once with ${hub.console.loginLink()} ; valid 15 min)` : 'off'}`,
      `device key ${key.prefix}… stored in ${paths.marketKey}; agent ${info.agentId}`,
      'Ctrl-C stops everything.',
    ].join('\n'),
  )
  if (r.demo) await demo(r, hub, () => extras, marketUrl, info.agentId, sessionStart)
  await new Promise<void>((done) =>
    signal.aborted ? done() : signal.addEventListener('abort', () => done(), { once: true }),
  )
}

async function demo(
  r: RunInput,
  hub: RunningHub,
  extras: () => ListingParts | null,
  marketUrl: string,
  agentId: string,
  from: number,
): Promise<void> {
  const { io, signal } = r
  let told = false
  // The checkpoint in vending-dispense waits for a person; the demo stands in, visibly.
  const approver = (async () => {
    while (!signal.aborted) {
      for (const run of hub.engine.pending()) {
        if (!told) {
          io.out(
            `demo       approving operator checkpoints automatically (run ${run.id} of ${run.sop} and later ones); a real operator uses svc sop approve <run>`,
          )
          told = true
        }
        await hub.engine
          .approve(run.id, { by: 'svc start (demo)', note: 'approved automatically by the npm start demo' })
          .catch(() => undefined)
      }
      await sleep(250, signal)
    }
  })()
  void approver
  const x = extras()
  if (!x?.store || !x.listings) {
    io.err('demo: the hub has no attestation store (no SOP calls chain_attest): nothing to list')
    return
  }
  io.out(`demo       waiting for ${r.minLines} attested lines, then listing them`)
  const q = await queueDemoListing({
    home: svcPaths(io.env).home,
    store: x.store,
    agentId,
    market: marketUrl,
    min: r.minLines,
    from,
    signal,
  })
  if (!q.ok) {
    if (!signal.aborted) io.err(`demo: listing refused: ${q.error}`)
    return
  }
  const dir = join(svcPaths(io.env).home, 'listings', q.entry.id)
  while (!signal.aborted) {
    await x.listings()?.kick()
    const e = await loadEntry(dir)
    if (e.ok && e.entry.state === 'posted') {
      io.out(`listing    ${e.entry.url}  (${e.entry.rows} attested lines; open it in a browser)`)
      return
    }
    if (e.ok && e.entry.state === 'failed') {
      io.err(`demo: the market refused the listing: ${e.entry.lastError}`)
      return
    }
    await sleep(1000, signal)
  }
}
