// The real parts `svc hub` composes: the bridge, the attestation store behind `chain_attest`
// (and its sync loop when `[chain]` is configured), the local API. Kept apart from hub.ts so the
// composition can be tested with fewer parts.
// The bridge and the attestation parts are imported only when used (boards configured; a SOP
// calling chain_attest or a [chain] section): on a Raspberry-Pi-class hub, viem and the serial
// stack are tens of MB of resident memory that a hub without them should not pay for.
import type { AttestStore, AttestSync } from '../attest/index.ts'
import { createOpenAiAgent } from '../agent/openai.ts'
import type { AgentAdapter } from '../agent/types.ts'
import { type Failure, fail } from '../../errors/codes.ts'
import { svcPaths } from '../paths.ts'
import { startService } from '../service/index.ts'
import type { Sop } from '../../sops/types.ts'
import type { HubConfig } from './config.ts'
import type { AttestationParts, HubParts } from './parts.ts'
import type { Log } from '../log.ts'

/** `[chain]` keys the attestation sync needs; all or none (the sync is off without them). */
const SYNC_KEYS = ['rpc_url', 'validation_registry', 'agent_id', 'attestor_address', 'attestor_url'] as const

export type ChainSection =
  | {
      ok: true
      sync: {
        rpcUrl: string
        validationRegistry: string
        agentId: string
        attestorAddress: string
        attestorUrl: string
        batchExecutor?: string
        feeCapGwei?: number
        stuckAfterMs?: number
        progressEveryMs?: number
        maxBatchLines?: number
      } | null
    }
  | Failure

/** The sync's settings from `[chain]`, whose keys and types hub.toml's schema checked (config-schema.ts). */
export function readChainSection(chain: HubConfig['chain']): ChainSection {
  if (chain === null) return { ok: true, sync: null }
  const missing = SYNC_KEYS.filter((k) => chain[k] === undefined)
  if (missing.length === SYNC_KEYS.length) return { ok: true, sync: null }
  if (missing.length > 0)
    return fail(
      'BAD_CONFIG',
      `chain: attestation sync needs ${SYNC_KEYS.join(', ')}; missing ${missing.join(', ')}`,
    )
  const c = chain as Required<NonNullable<HubConfig['chain']>>
  return {
    ok: true,
    sync: {
      rpcUrl: c.rpc_url,
      validationRegistry: c.validation_registry,
      agentId: String(c.agent_id),
      attestorAddress: c.attestor_address,
      attestorUrl: c.attestor_url,
      ...(chain.batch_executor !== undefined ? { batchExecutor: chain.batch_executor } : {}),
      ...(chain.max_fee_gwei !== undefined ? { feeCapGwei: chain.max_fee_gwei } : {}),
      ...(chain.stuck_after_s !== undefined ? { stuckAfterMs: chain.stuck_after_s * 1000 } : {}),
      ...(chain.progress_every_s !== undefined ? { progressEveryMs: chain.progress_every_s * 1000 } : {}),
      ...(chain.max_batch_lines !== undefined ? { maxBatchLines: chain.max_batch_lines } : {}),
    },
  }
}

/** Does any SOP name `tool` in a `tools:`/allow list or a `call:`? */
export function sopsUseTool(sops: readonly Sop[], tool: string): boolean {
  return sops.some((s) =>
    s.steps.some(
      (st) =>
        st.tools.includes(tool) ||
        (st.allowTools ?? []).includes(tool) ||
        st.calls.some((c) => c.tool === tool),
    ),
  )
}

/** The attestation parts, with the store they own (the listing sync builds listings from it). */
export type AttestParts = AttestationParts & { store: AttestStore }

export async function attestParts(
  config: HubConfig,
  log: Log,
  env: NodeJS.ProcessEnv = process.env,
): Promise<AttestParts> {
  const chain = readChainSection(config.chain)
  if (!chain.ok) throw new Error(chain.error)
  const [
    { attestStorePath, createAttestSync, loadOrCreateDeviceKey, openAttestStore },
    { createChainAttestTool },
    { attestRoutes },
  ] = await Promise.all([
    import('../attest/index.ts'),
    import('../../tools/chain_attest.ts'),
    import('../attest/api.ts'),
  ])
  // A new attestation store is born with its format recorded (hub/stores/README.md, "Format
  // versions and upgrades"); one already there was checked at the hub's start.
  await (await import('../stores/check.ts')).prepareNewStore(config.dataDir, 'attest')
  const store = await openAttestStore(attestStorePath(config.dataDir))
  try {
    const signer = await loadOrCreateDeviceKey(svcPaths(env).deviceKey)
    const schema = config.chain?.schema
    const tool = createChainAttestTool({ store, signer, ...(schema ? { schema } : {}) })
    let sync: AttestSync | null = null
    if (chain.sync) {
      const { attestorUrl, feeCapGwei, stuckAfterMs, progressEveryMs, maxBatchLines, ...rest } = chain.sync
      sync = createAttestSync({
        store,
        signer,
        chain: rest as never,
        attestorUrl,
        log,
        ...(feeCapGwei !== undefined ? { feeCapGwei } : {}),
        ...(stuckAfterMs !== undefined ? { stuckAfterMs } : {}),
        ...(progressEveryMs !== undefined ? { progressEveryMs } : {}),
        ...(maxBatchLines !== undefined ? { maxBatchLines } : {}),
      })
    } else {
      log.info('no [chain] sync settings: attested lines are stored and wait for `svc attest sync`')
    }
    log.info({ device: signer.address, signer: signer.backend }, 'device key loaded')
    if (signer.backend === 'noble') {
      const native = (await import('../attest/native-secp256k1.ts')).loadNativeSecp256k1()
      log.warn(
        { reason: native.ok ? null : native.error },
        'device signatures in pure JS, about 7x slower: the libsecp256k1 binary did not load (README: Device signatures)',
      )
    }
    return {
      tools: [tool],
      store,
      routes: attestRoutes(store, () => sync?.status() ?? null),
      console: {
        store,
        sync: () => sync?.status() ?? null,
        syncNow: sync ? () => (sync as AttestSync).runOnce() : null,
      },
      start: () => sync?.start(),
      async close() {
        await sync?.stop()
        await store.close()
      },
    }
  } catch (err) {
    await store.close()
    throw err
  }
}

/** `[agent]` → the OpenAI-compatible adapter; the key comes from the named environment variable. */
export function agentFromConfig(config: HubConfig, env: NodeJS.ProcessEnv): AgentAdapter | undefined {
  const a = config.agent
  if (!a) return undefined
  const apiKey = a.apiKeyEnv !== undefined ? env[a.apiKeyEnv] : undefined
  if (a.apiKeyEnv !== undefined && !apiKey)
    throw new Error(`agent.api_key_env: environment variable ${a.apiKeyEnv} is not set`)
  return createOpenAiAgent({
    url: a.url,
    model: a.model,
    ...(apiKey ? { apiKey } : {}),
    ...(a.maxRounds !== undefined ? { maxRounds: a.maxRounds } : {}),
    ...(a.timeoutMs !== undefined ? { timeoutMs: a.timeoutMs } : {}),
  })
}

export function realParts(env: NodeJS.ProcessEnv = process.env, config?: HubConfig): HubParts {
  const paths = svcPaths(env)
  const agent = config ? agentFromConfig(config, env) : undefined
  return {
    ...(agent ? { agent } : {}),
    localApi: {
      create: async ({ engine, token, log }) =>
        (await import('../api/index.ts')).createLocalApi({ engine, token, log }),
      issueToken: async () => (await import('../api/index.ts')).issueApiToken(paths.apiToken),
      writeInfo: async (url, about) =>
        (await import('../api/index.ts')).writeApiInfo(url, paths.apiInfo, about),
      removeInfo: async () => (await import('../api/index.ts')).removeApiInfo(paths.apiInfo),
      home: paths.home,
    },
    console: async (o) => (await import('../console/index.ts')).startConsole({ ...o, home: paths.home }),
    service: ({ log }) => startService(env, log),
    createBridge: async ({ boards, publish, log, availability }) => {
      const o = { boards, publish, log, ...(availability ? { availability } : {}) }
      // Simulated boards play in-process on their own binding; the bridge never imports boards/.
      if (boards.some((b) => b.simulate)) {
        const { createSimulatingBridge } = await import('../../boards/simulator/bridge.ts')
        return createSimulatingBridge(o)
      }
      const { createBridge } = await import('../../bridge/index.ts')
      return createBridge(o)
    },
    attestation: async ({ config, sops, log }) => {
      if (config.chain === null && !sopsUseTool(sops, 'chain_attest')) {
        log.info(
          'no SOP calls chain_attest and no [chain] section: attestation not loaded (SIGHUP reload will not add it; restart the hub)',
        )
        return { tools: [] }
      }
      const attest = await attestParts(config, log, env)
      // Listings queue offline and post when the market answers.
      const { withListingSync } = await import('../listing/hub-sync.ts')
      const chain = readChainSection(config.chain)
      return withListingSync(attest, {
        store: attest.store,
        agentId: chain.ok && chain.sync ? chain.sync.agentId : null,
        env,
        log,
      })
    },
  }
}
