// `svc chain enrol`: the owner of an agent on an ERC-8004 IdentityRegistry makes this hub's
// device key able to attest for it, on any chain 10143:
//   1. register a new agent (or take the one given, or the one the chain file names);
//   2. approve the device as operator (ERC-721 setApprovalForAll), so its validationRequests pass;
//   3. set the device as the agent's wallet (ERC-8004 setAgentWallet, with the device's EIP-712
//      signature), so the attestor accepts the lines it signs.
// The chain is read first and each step is skipped when already done, so a second run sends
// nothing. Before anything is sent, the chain is checked (preflight) and the owner's balance
// against the estimated cost; any refusal changes nothing on chain.
import { type Address, type Hex, formatEther, formatGwei } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { CodedError, fail, type Result } from '../errors/codes.ts'
import { identityRegistryAbi } from './abi.generated.ts'
import { CHAIN_ID } from './chain-id.ts'
import type { ChainInfo } from './chain-file.ts'
import { type SvcPublicClient, publicClientFor, walletClientFor } from './clients.ts'
import { registerAgent, signAgentWallet } from './deploy.ts'
import { describeCallError } from './official-errors.ts'
import { runPreflight } from './preflight-reads.ts'

export interface EnrolInput {
  rpcUrl: string
  identityRegistry: Address
  validationRegistry?: Address
  ownerKey: Hex
  deviceKey: Hex
  /** --agent-id: enrol into this agent (the owner key must own it). */
  agentId?: bigint
  /** The agent the chain file named last time (used when the owner still owns it). */
  previousAgentId?: bigint
  agentURI: string
  dryRun?: boolean
  /** Called once, just before the first transaction (the CLI writes a new device key then). */
  beforeSend?: () => Promise<void>
  /** Progress lines (each transaction as it is sent and mined). */
  log?: (line: string) => void
  pub?: SvcPublicClient
}

export interface EnrolStep {
  step: 'register' | 'approve' | 'wallet'
  /** done: sent and mined now; skipped: already so on chain; planned: --dry-run. */
  status: 'done' | 'skipped' | 'planned'
  detail: string
  tx?: Hex
  gas?: bigint
}

export type EnrolResult = Result<{
  agentId?: bigint
  owner: Address
  device: Address
  steps: EnrolStep[]
  maxFeePerGas: bigint
}>

const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase()

export async function enrol(input: EnrolInput): Promise<EnrolResult> {
  const log = input.log ?? (() => {})
  const pub = input.pub ?? publicClientFor(input.rpcUrl, { timeout: 15_000 })
  const owner = privateKeyToAccount(input.ownerKey).address
  const device = privateKeyToAccount(input.deviceKey).address
  const id = input.identityRegistry

  const pre = await runPreflight(
    {
      rpcUrl: input.rpcUrl,
      identityRegistry: id,
      ...(input.validationRegistry ? { validationRegistry: input.validationRegistry } : {}),
    },
    pub,
  )
  // Not unreachable: the network the owner named is not one to enrol on (preflight says why).
  if (!pre.ok) return fail(pre.unreachable ? 'UNREACHABLE' : 'BAD_INPUT', `${pre.failures[0]} (nothing sent)`)

  try {
    const read = async <T>(functionName: string, args: unknown[]): Promise<T> =>
      (await pub.readContract({ address: id, abi: identityRegistryAbi, functionName, args } as never)) as T

    // Which agent: --agent-id must be the owner's; the chain file's is taken only when it still is.
    let agentId: bigint | undefined
    const steps: EnrolStep[] = []
    if (input.agentId !== undefined) {
      const o = await ownerOf(pub, id, input.agentId)
      if (!o.ok)
        return { ...o, error: `agent ${input.agentId} on identity registry ${id}: ${o.error} (nothing sent)` }
      if (!same(o.owner, owner))
        return fail(
          'FORBIDDEN',
          `wallet ${owner} is not the owner of agent ${input.agentId} on ${id} (its owner is ${o.owner}); use the owner's key (nothing sent)`,
        )
      agentId = input.agentId
      steps.push({
        step: 'register',
        status: 'skipped',
        detail: `agent ${agentId} (--agent-id), owned by ${owner}`,
      })
    } else if (input.previousAgentId !== undefined) {
      const o = await ownerOf(pub, id, input.previousAgentId)
      if (o.ok && same(o.owner, owner)) {
        agentId = input.previousAgentId
        steps.push({
          step: 'register',
          status: 'skipped',
          detail: `agent ${agentId} (from the chain file), owned by ${owner}`,
        })
      }
    }

    const fees = await pub.estimateFeesPerGas()
    const approved = same(owner, device) || (await read<boolean>('isApprovedForAll', [owner, device]))
    const walletSet = agentId !== undefined && same(await read<Address>('getAgentWallet', [agentId]), device)

    // Estimate what will be sent; check the owner can pay for it before sending anything.
    const plan: EnrolStep[] = []
    if (agentId === undefined)
      plan.push({
        step: 'register',
        status: 'planned',
        detail: `register("${input.agentURI}") on ${id}`,
        gas: await pub.estimateContractGas({
          address: id,
          abi: identityRegistryAbi,
          functionName: 'register',
          args: [input.agentURI],
          account: owner,
        }),
      })
    if (!approved)
      plan.push({
        step: 'approve',
        status: 'planned',
        detail: `setApprovalForAll(${device}, true) on ${id}`,
        gas: await pub.estimateContractGas({
          address: id,
          abi: identityRegistryAbi,
          functionName: 'setApprovalForAll',
          args: [device, true],
          account: owner,
        }),
      })
    else
      steps.push({
        step: 'approve',
        status: 'skipped',
        detail: `device ${device} is already the owner or an approved operator`,
      })
    if (!walletSet) {
      const wallet: EnrolStep = {
        step: 'wallet',
        status: 'planned',
        detail: `setAgentWallet(${agentId ?? '<new agent>'}, ${device}, deadline, device signature) on ${id}`,
      }
      if (agentId !== undefined) wallet.gas = await estimateWallet(pub, input, agentId, owner)
      plan.push(wallet)
    } else
      steps.push({
        step: 'wallet',
        status: 'skipped',
        detail: `device ${device} is already agent ${agentId}'s wallet`,
      })

    const knownCost = plan.reduce((s, p) => s + (p.gas ?? 0n), 0n) * fees.maxFeePerGas
    if (input.dryRun)
      return {
        ok: true,
        ...(agentId !== undefined ? { agentId } : {}),
        owner,
        device,
        steps: [...steps, ...plan],
        maxFeePerGas: fees.maxFeePerGas,
      }
    if (plan.length > 0) {
      const balance = await pub.getBalance({ address: owner })
      if (balance < knownCost)
        return fail(
          'CONFLICT',
          `owner ${owner}: balance ${formatEther(balance)} MON is below ${formatEther(knownCost)} MON, the estimated cost at ${formatGwei(fees.maxFeePerGas)} gwei: fund it (nothing sent)`,
        )
    }

    if (plan.length > 0) await input.beforeSend?.()
    const ownerWallet = walletClientFor(input.rpcUrl, input.ownerKey, { timeout: 30_000 })
    for (const p of plan) {
      if (p.step === 'register') {
        log(`sending ${p.detail}`)
        agentId = await registerAgent(ownerWallet, pub, id, input.agentURI)
        log(`registered agent ${agentId} (if a later step fails, re-run with --agent-id ${agentId})`)
        steps.push({ step: 'register', status: 'done', detail: `registered agent ${agentId}` })
      } else if (p.step === 'approve') {
        log(`sending ${p.detail}`)
        const tx = await ownerWallet.writeContract({
          address: id,
          abi: identityRegistryAbi,
          functionName: 'setApprovalForAll',
          args: [device, true],
        })
        await mined(pub, tx, 'setApprovalForAll')
        steps.push({ step: 'approve', status: 'done', detail: `approved device ${device} as operator`, tx })
      } else {
        const agent = agentId as bigint
        // After a fresh register the agent's wallet is the owner; it may already be the device.
        if (same(await read<Address>('getAgentWallet', [agent]), device)) {
          steps.push({
            step: 'wallet',
            status: 'skipped',
            detail: `device ${device} is already agent ${agent}'s wallet`,
          })
          continue
        }
        const deadline = (await pub.getBlock()).timestamp + 240n
        const signature = await signAgentWallet(input.deviceKey, id, agent, owner, deadline)
        log(`sending setAgentWallet(${agent}, ${device}, ${deadline}, …) on ${id}`)
        const tx = await ownerWallet.writeContract({
          address: id,
          abi: identityRegistryAbi,
          functionName: 'setAgentWallet',
          args: [agent, device, deadline, signature],
        })
        await mined(pub, tx, 'setAgentWallet')
        steps.push({
          step: 'wallet',
          status: 'done',
          detail: `device ${device} is agent ${agent}'s wallet`,
          tx,
        })
      }
    }
    return {
      ok: true,
      ...(agentId !== undefined ? { agentId } : {}),
      owner,
      device,
      steps,
      maxFeePerGas: fees.maxFeePerGas,
    }
  } catch (err) {
    // Mined but reverted: the node answered, so this is not an unreachable RPC.
    if (err instanceof CodedError) return fail(err.code, `identity registry ${id}: ${err.message}`)
    const d = describeCallError(err)
    return 'revert' in d
      ? fail('CHAIN_REVERTED', `identity registry ${id}: ${d.revert}`)
      : fail('UNREACHABLE', `rpc ${input.rpcUrl}: ${d.unreachable}`)
  }
}

async function ownerOf(
  pub: SvcPublicClient,
  id: Address,
  agentId: bigint,
): Promise<Result<{ owner: Address }>> {
  try {
    const owner = await pub.readContract({
      address: id,
      abi: identityRegistryAbi,
      functionName: 'ownerOf',
      args: [agentId],
    })
    return { ok: true, owner }
  } catch (err) {
    const d = describeCallError(err)
    if ('unreachable' in d) throw err
    return fail('CHAIN_REVERTED', d.revert)
  }
}

async function estimateWallet(pub: SvcPublicClient, input: EnrolInput, agentId: bigint, owner: Address) {
  const deadline = (await pub.getBlock()).timestamp + 240n
  const device = privateKeyToAccount(input.deviceKey).address
  const signature = await signAgentWallet(input.deviceKey, input.identityRegistry, agentId, owner, deadline)
  return pub.estimateContractGas({
    address: input.identityRegistry,
    abi: identityRegistryAbi,
    functionName: 'setAgentWallet',
    args: [agentId, device, deadline, signature],
    account: owner,
  })
}

async function mined(pub: SvcPublicClient, hash: Hex, what: string): Promise<void> {
  const r = await pub.waitForTransactionReceipt({ hash })
  if (r.status !== 'success') throw new CodedError('CHAIN_REVERTED', `${what}: transaction ${hash} reverted`)
}

/**
 * `--print-signature`: the device's AgentWalletSet signature for an owner who sends
 * setAgentWallet from elsewhere (a browser wallet). The deadline is the latest block's time plus
 * 4 minutes: the registry refuses a deadline more than 5 minutes ahead, so use it at once.
 */
export async function deviceSignature(input: {
  rpcUrl: string
  identityRegistry: Address
  agentId: bigint
  owner: Address
  deviceKey: Hex
  pub?: SvcPublicClient
}): Promise<{
  chainId: number
  identityRegistry: Address
  agentId: string
  newWallet: Address
  owner: Address
  deadline: string
  signature: Hex
}> {
  const pub = input.pub ?? publicClientFor(input.rpcUrl, { timeout: 15_000 })
  const deadline = (await pub.getBlock()).timestamp + 240n
  const signature = await signAgentWallet(
    input.deviceKey,
    input.identityRegistry,
    input.agentId,
    input.owner,
    deadline,
  )
  return {
    chainId: CHAIN_ID,
    identityRegistry: input.identityRegistry,
    agentId: input.agentId.toString(),
    newWallet: privateKeyToAccount(input.deviceKey).address,
    owner: input.owner,
    deadline: deadline.toString(),
    signature,
  }
}

/** The chain file for an enrolled device (no dev accounts: this is a real network's). */
export function enrolledChainInfo(x: {
  rpcUrl: string
  identityRegistry: Address
  validationRegistry: Address
  agentId: bigint
  attestorAddress: Address
  attestorUrl?: string
}): ChainInfo {
  return {
    version: 1,
    rpcUrl: x.rpcUrl,
    chainId: CHAIN_ID,
    identityRegistry: x.identityRegistry,
    validationRegistry: x.validationRegistry,
    agentId: x.agentId.toString(),
    attestorAddress: x.attestorAddress,
    ...(x.attestorUrl ? { attestorUrl: x.attestorUrl } : {}),
  }
}
