// A development chain in one call: anvil on a free loopback port, both registries deployed,
// a demo agent (id 0) owned by the `owner` dev account, the `device` account as its verified
// wallet and approved operator. Used by `svc chain dev` and by every test that needs a chain.
import { mkdir, rm } from 'node:fs/promises'
import { join } from 'node:path'
import type { Address } from 'viem'
import { type DevAccounts, devAccounts } from './accounts.ts'
import { startAnvil } from './anvil.ts'
import { CHAIN_ID } from './chain-id.ts'
import { type ChainInfo, chainFilePath, readChainFile } from './chain-file.ts'
import { publicClientFor, walletClientFor } from './clients.ts'
import {
  approveOperator,
  deployBatchExecutor,
  deployRegistries,
  registerAgent,
  setAgentWallet,
} from './deploy.ts'

export interface DevChain {
  rpcUrl: string
  chainId: typeof CHAIN_ID
  identityRegistry: Address
  validationRegistry: Address
  /** Decimal string ("0"), as in the chain file and the manifest. */
  agentId: string
  accounts: DevAccounts
  /** anvil's pid (stop() kills it). */
  pid: number
  /** The chain file contents for this chain (attestor = the `attestor` dev account). */
  info: ChainInfo
  /** The chain was loaded from `stateFile` with its registries (nothing deployed this time). */
  kept: boolean
  stop(): Promise<void>
}

export interface DevChainOptions {
  port?: number
  host?: string
  agentURI?: string
  /** Keep the chain in this file across restarts (anvil --state); absent: a new chain each time. */
  stateFile?: string
  /** Seconds per block (fractions allowed); absent: each transaction mined at once. */
  blockTime?: number
  /**
   * The chain file written for the kept chain last time: its registries and agent are used again
   * when the loaded chain still has them, instead of deploying new ones.
   */
  previous?: ChainInfo
}

/** Where `svc chain dev` and `svc start` keep the dev chain: <SVC_HOME>/chain/anvil-state.json. */
export function devChainStateFile(home: string): string {
  return join(home, 'chain', 'anvil-state.json')
}

/**
 * The options that keep the dev chain in `home` across restarts: its state file and the chain
 * file written for it last time. `fresh` throws the kept chain away first.
 */
export async function keptChain(
  home: string,
  fresh: boolean,
): Promise<Pick<DevChainOptions, 'stateFile' | 'previous'>> {
  const stateFile = devChainStateFile(home)
  if (fresh) await rm(stateFile, { force: true })
  await mkdir(join(home, 'chain'), { recursive: true })
  const previous = await readChainFile(chainFilePath(home))
  return { stateFile, ...(previous.ok && !fresh ? { previous: previous.value } : {}) }
}

/** True when the loaded chain still holds `previous`'s registries (code at both addresses). */
async function stillThere(rpcUrl: string, previous: ChainInfo): Promise<boolean> {
  const pub = publicClientFor(rpcUrl)
  const [identity, validation] = await Promise.all([
    pub.getCode({ address: previous.identityRegistry }),
    pub.getCode({ address: previous.validationRegistry }),
  ])
  return identity !== undefined && identity !== '0x' && validation !== undefined && validation !== '0x'
}

export async function startDevChain(opts: DevChainOptions = {}): Promise<DevChain> {
  const anvil = await startAnvil({
    ...(opts.port !== undefined ? { port: opts.port } : {}),
    ...(opts.host ? { host: opts.host } : {}),
    ...(opts.stateFile !== undefined ? { stateFile: opts.stateFile } : {}),
    ...(opts.blockTime !== undefined ? { blockTime: opts.blockTime } : {}),
  })
  try {
    const accounts = devAccounts()
    if (opts.stateFile !== undefined && opts.previous && (await stillThere(anvil.rpcUrl, opts.previous))) {
      const info: ChainInfo = { ...opts.previous, rpcUrl: anvil.rpcUrl, accounts }
      delete info.attestorUrl
      return {
        rpcUrl: anvil.rpcUrl,
        chainId: CHAIN_ID,
        identityRegistry: info.identityRegistry,
        validationRegistry: info.validationRegistry,
        agentId: info.agentId,
        accounts,
        pid: anvil.pid,
        info,
        kept: true,
        stop: anvil.stop,
      }
    }
    const pub = publicClientFor(anvil.rpcUrl)
    const deployer = walletClientFor(anvil.rpcUrl, accounts.deployer.privateKey)
    const owner = walletClientFor(anvil.rpcUrl, accounts.owner.privateKey)
    const regs = await deployRegistries(deployer, pub)
    const batchExecutor = await deployBatchExecutor(deployer, pub)
    const agent = await registerAgent(owner, pub, regs.identityRegistry, opts.agentURI ?? 'svc://agents/demo')
    await setAgentWallet(owner, pub, regs.identityRegistry, agent, accounts.device.privateKey)
    await approveOperator(owner, pub, regs.identityRegistry, accounts.device.address)
    const info: ChainInfo = {
      version: 1,
      rpcUrl: anvil.rpcUrl,
      chainId: CHAIN_ID,
      identityRegistry: regs.identityRegistry,
      validationRegistry: regs.validationRegistry,
      agentId: agent.toString(),
      attestorAddress: accounts.attestor.address,
      batchExecutor,
      accounts,
    }
    return {
      rpcUrl: anvil.rpcUrl,
      chainId: CHAIN_ID,
      identityRegistry: regs.identityRegistry,
      validationRegistry: regs.validationRegistry,
      agentId: info.agentId,
      accounts,
      pid: anvil.pid,
      info,
      kept: false,
      stop: anvil.stop,
    }
  } catch (err) {
    await anvil.stop()
    throw err
  }
}

/**
 * Makes `device` (e.g. the hub's own device key) able to attest for the dev chain's agent:
 * funds it from the deployer, sets it as the agent's verified wallet and approves it as
 * operator. `svc chain dev` does this for <SVC_HOME>/device.key.
 */
export async function enrolDevice(
  info: { rpcUrl: string; identityRegistry: Address; agentId: string; accounts: DevAccounts },
  devicePrivateKey: `0x${string}`,
): Promise<Address> {
  const pub = publicClientFor(info.rpcUrl)
  const deployer = walletClientFor(info.rpcUrl, info.accounts.deployer.privateKey)
  const owner = walletClientFor(info.rpcUrl, info.accounts.owner.privateKey)
  const device = walletClientFor(info.rpcUrl, devicePrivateKey).account.address
  // 100 MON: Monad's 10 MON reserve for a delegated account (chain/preflight.ts) and fees above it.
  const fund = await deployer.sendTransaction({ to: device, value: 100n * 10n ** 18n })
  await pub.waitForTransactionReceipt({ hash: fund })
  await setAgentWallet(owner, pub, info.identityRegistry, BigInt(info.agentId), devicePrivateKey)
  await approveOperator(owner, pub, info.identityRegistry, device)
  return device
}
