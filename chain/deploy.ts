// Deploys the two registries and sets up an agent: register, verified wallet, operator.
// Each function takes clients (viem style) so the same code deploys to anvil or Monad testnet.
import { type Address, type Hex, decodeEventLog } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { batchExecutorAbi, identityRegistryAbi, validationRegistryAbi } from './abi.generated.ts'
import { CHAIN_ID } from './chain-id.ts'
import type { SvcPublicClient, SvcWalletClient } from './clients.ts'
import { compileContracts } from './compile.ts'

export interface Registries {
  identityRegistry: Address
  validationRegistry: Address
}

async function mined(pub: SvcPublicClient, hash: Hex, what: string) {
  const r = await pub.waitForTransactionReceipt({ hash })
  if (r.status !== 'success') throw new Error(`${what}: transaction ${hash} reverted`)
  return r
}

export async function deployRegistries(wallet: SvcWalletClient, pub: SvcPublicClient): Promise<Registries> {
  const a = await compileContracts()
  const idHash = await wallet.deployContract({
    abi: identityRegistryAbi,
    bytecode: a.IdentityRegistry.bytecode,
  })
  const idR = await mined(pub, idHash, 'deploy IdentityRegistry')
  if (!idR.contractAddress) throw new Error('deploy IdentityRegistry: no contract address')
  const vHash = await wallet.deployContract({
    abi: validationRegistryAbi,
    bytecode: a.ValidationRegistry.bytecode,
    args: [idR.contractAddress],
  })
  const vR = await mined(pub, vHash, 'deploy ValidationRegistry')
  if (!vR.contractAddress) throw new Error('deploy ValidationRegistry: no contract address')
  return { identityRegistry: idR.contractAddress, validationRegistry: vR.contractAddress }
}

/**
 * svc's own ValidationRegistry (chain/contracts/), checking agents on an existing identity
 * registry: for a network whose official ValidationRegistry is not deployed yet.
 */
export async function deployValidationRegistry(
  wallet: SvcWalletClient,
  pub: SvcPublicClient,
  identityRegistry: Address,
): Promise<Address> {
  const a = await compileContracts()
  const hash = await wallet.deployContract({
    abi: validationRegistryAbi,
    bytecode: a.ValidationRegistry.bytecode,
    args: [identityRegistry],
  })
  const r = await mined(pub, hash, 'deploy ValidationRegistry')
  if (!r.contractAddress) throw new Error('deploy ValidationRegistry: no contract address')
  return r.contractAddress
}

/**
 * The EIP-7702 batch executor (chain/contracts/BatchExecutor.sol) the device and the attestor
 * delegate to; one per chain serves every account (it has no storage and no owner).
 */
export async function deployBatchExecutor(wallet: SvcWalletClient, pub: SvcPublicClient): Promise<Address> {
  const a = await compileContracts()
  const hash = await wallet.deployContract({ abi: batchExecutorAbi, bytecode: a.BatchExecutor.bytecode })
  const r = await mined(pub, hash, 'deploy BatchExecutor')
  if (!r.contractAddress) throw new Error('deploy BatchExecutor: no contract address')
  return r.contractAddress
}

/** ERC-8004 `register(agentURI)`; returns the new agent id from the Registered event. */
export async function registerAgent(
  wallet: SvcWalletClient,
  pub: SvcPublicClient,
  identityRegistry: Address,
  agentURI: string,
): Promise<bigint> {
  const hash = await wallet.writeContract({
    address: identityRegistry,
    abi: identityRegistryAbi,
    functionName: 'register',
    args: [agentURI],
  })
  const r = await mined(pub, hash, 'register agent')
  for (const log of r.logs) {
    if (log.address.toLowerCase() !== identityRegistry.toLowerCase()) continue
    try {
      const ev = decodeEventLog({ abi: identityRegistryAbi, data: log.data, topics: log.topics })
      if (ev.eventName === 'Registered') return ev.args.agentId
    } catch {
      // another event of the registry
    }
  }
  throw new Error('register agent: no Registered event')
}

/** The EIP-712 AgentWalletSet message of ERC-8004 `setAgentWallet` (domain "ERC8004IdentityRegistry", version "1"). */
export function agentWalletTypedData(
  identityRegistry: Address,
  agentId: bigint,
  newWallet: Address,
  owner: Address,
  deadline: bigint,
) {
  return {
    domain: {
      name: 'ERC8004IdentityRegistry',
      version: '1',
      chainId: CHAIN_ID,
      verifyingContract: identityRegistry,
    },
    types: {
      AgentWalletSet: [
        { name: 'agentId', type: 'uint256' },
        { name: 'newWallet', type: 'address' },
        { name: 'owner', type: 'address' },
        { name: 'deadline', type: 'uint256' },
      ],
    },
    primaryType: 'AgentWalletSet',
    message: { agentId, newWallet, owner, deadline },
  } as const
}

/**
 * The new wallet's proof of control for `setAgentWallet`. The registry accepts a deadline at
 * most 5 minutes after the block it is mined in, so the signature is good for that long.
 */
export async function signAgentWallet(
  newWalletKey: Hex,
  identityRegistry: Address,
  agentId: bigint,
  owner: Address,
  deadline: bigint,
): Promise<Hex> {
  const w = privateKeyToAccount(newWalletKey)
  return w.signTypedData(agentWalletTypedData(identityRegistry, agentId, w.address, owner, deadline))
}

/**
 * ERC-8004 `setAgentWallet`: the owner (wallet) sends it, the new wallet proves control by
 * signing the EIP-712 AgentWalletSet message (domain "ERC8004IdentityRegistry", version "1").
 */
export async function setAgentWallet(
  ownerWallet: SvcWalletClient,
  pub: SvcPublicClient,
  identityRegistry: Address,
  agentId: bigint,
  newWalletKey: Hex,
): Promise<void> {
  const newWallet = privateKeyToAccount(newWalletKey)
  const block = await pub.getBlock()
  const deadline = block.timestamp + 120n
  const signature = await signAgentWallet(
    newWalletKey,
    identityRegistry,
    agentId,
    ownerWallet.account.address,
    deadline,
  )
  const hash = await ownerWallet.writeContract({
    address: identityRegistry,
    abi: identityRegistryAbi,
    functionName: 'setAgentWallet',
    args: [agentId, newWallet.address, deadline, signature],
  })
  await mined(pub, hash, 'setAgentWallet')
}

/** ERC-721 `setApprovalForAll`: lets `operator` (the device) send validation requests for the owner's agents. */
export async function approveOperator(
  ownerWallet: SvcWalletClient,
  pub: SvcPublicClient,
  identityRegistry: Address,
  operator: Address,
): Promise<void> {
  const hash = await ownerWallet.writeContract({
    address: identityRegistry,
    abi: identityRegistryAbi,
    functionName: 'setApprovalForAll',
    args: [operator, true],
  })
  await mined(pub, hash, 'setApprovalForAll')
}
