// Preflight: is this chain one svc can trust with its lines? Pure checks over injected reads
// (preflight-reads.ts gives the real ones), run by the hub's sync and the attestor before they
// send anything, and by `svc chain check`. Each failure is one line that names the address and
// the fix; a sync that meets one sends nothing and marks nothing attested.
//
// What is checked (ERC-8004 v2.0.0; chain/README.md "Preflight"):
//   1. the RPC answers, with chain id 10143;
//   2. each configured registry has code;
//   3. the ValidationRegistry answers getVersion() == "2.0.0", or at least answers
//      getValidationStatus for a never-requested hash with the revert "unknown" (svc's own
//      registry has no getVersion); a proxy with no implementation behind it does neither;
//   4. the IdentityRegistry supports ERC-721 (ERC-165 0x80ac58cd);
//   5. the device is the agent's owner or an approved operator;
//   6. the attestor key is the attestor address;
//   7. balances cover N transactions at current fees (a warning, with the numbers); on Monad, on
//      top of Monad's 10 MON reserve (below).
import { type Address, formatEther, formatGwei, keccak256, stringToHex } from 'viem'
import type { Failure } from '../errors/codes.ts'
import { CHAIN_ID } from './chain-id.ts'

/** A call the contract refused: `revert` is its reason (or official error by name), read as data. */
export type Reverted = Failure<'CHAIN_REVERTED'> & { revert: string }

/** A read's value, a revert, or no answer at all (UNREACHABLE, with why). */
export type Read<T> = { ok: true; value: T } | Reverted | Failure<'UNREACHABLE'>

/** The chain reads preflight needs; each returns a value, never throws. */
export interface PreflightReads {
  chainId(): Promise<Read<number>>
  hasCode(address: Address): Promise<Read<boolean>>
  /** getVersion() */
  version(address: Address): Promise<Read<string>>
  /** getValidationStatus(hash): only whether it answers (a tuple) or reverts, and why. */
  validationStatus(validationRegistry: Address, requestHash: `0x${string}`): Promise<Read<unknown>>
  /** getIdentityRegistry() of a ValidationRegistry. */
  identityOf(validationRegistry: Address): Promise<Read<Address>>
  /** supportsInterface(0x80ac58cd) */
  supportsErc721(identityRegistry: Address): Promise<Read<boolean>>
  ownerOf(identityRegistry: Address, agentId: bigint): Promise<Read<Address>>
  isApprovedForAll(identityRegistry: Address, owner: Address, operator: Address): Promise<Read<boolean>>
  getApproved(identityRegistry: Address, agentId: bigint): Promise<Read<Address>>
  balance(address: Address): Promise<Read<bigint>>
  maxFeePerGas(): Promise<Read<bigint>>
}

export interface PreflightTarget {
  rpcUrl: string
  identityRegistry?: Address
  validationRegistry?: Address
  agentId?: bigint
  /** The hub's device key: sends validation requests, so must be the agent's owner or operator. */
  device?: Address
  /** The validator the chain file names. */
  attestorAddress?: Address
  /** The address of the attestor key this process holds (the attestor only). */
  attestorKey?: Address
  /** How many transactions each sender's balance should cover (default 100). */
  transactions?: number
  /** Also check the attestor address's balance when no attestor key is given (svc chain check). */
  attestorBalance?: boolean
}

export interface PreflightReport {
  ok: boolean
  /** One line each: what is wrong, at which address, and the fix. */
  failures: string[]
  /** Not fatal (low balances), with the numbers. */
  warnings: string[]
  /** What was checked and held, one line each (for `svc chain check`). */
  passed: string[]
  /** The RPC stopped answering (the failure says where): nothing after that point was checked. */
  unreachable: boolean
}

/**
 * Monad's chains by id (10143 testnet, 143 mainnet as Monad publishes them) and its reserve
 * balance: a transaction that would take an EIP-7702-delegated account below 10 MON reverts
 * unconditionally (Monad's docs, "EIP-7702 on Monad" and "Reserve balance"; chain/README.md
 * Batching). svc's batched sync delegates the device and the attestor, so each keeps 10 MON
 * plus its fees. svc's dev chain (anvil) takes Monad testnet's id, so the rule is checked there
 * too, and `svc chain dev` funds the device above it.
 */
export const MONAD_CHAINS: Readonly<Record<number, string>> = { 10143: 'Monad testnet', 143: 'Monad mainnet' }
export const MONAD_RESERVE = 10n * 10n ** 18n

export const EXPECTED_VERSION = '2.0.0'
export const ERC721_INTERFACE = '0x80ac58cd'
/** A hash nobody requests: its getValidationStatus must revert "unknown". */
export const PROBE_HASH = keccak256(stringToHex('svc.preflight.never-requested.v1'))
/**
 * Gas one sync transaction may take, for the balance warning: validationRequest on the official
 * registry is about 170k (a 7-field status and two list pushes), validationResponse less.
 */
export const GAS_PER_TX = 200_000n

class Stop extends Error {}

export async function preflight(target: PreflightTarget, reads: PreflightReads): Promise<PreflightReport> {
  const failures: string[] = []
  const warnings: string[] = []
  const passed: string[] = []
  let unreachable = false
  const rpc = target.rpcUrl
  /** An unreachable RPC ends the run: nothing else can be learnt. */
  function need<T>(r: Read<T>, what: string): { ok: true; value: T } | Reverted {
    if (!r.ok && r.code === 'UNREACHABLE') {
      failures.push(`rpc ${rpc}: no answer to ${what} (${r.error}): check rpcUrl and that the node is up`)
      unreachable = true
      throw new Stop()
    }
    return r
  }
  try {
    const id = need(await reads.chainId(), 'eth_chainId')
    if (!id.ok) throw new Stop()
    if (id.value !== CHAIN_ID) {
      failures.push(
        `rpc ${rpc}: chain id ${id.value}, not ${CHAIN_ID} (Monad testnet): point rpcUrl at a chain ${CHAIN_ID} node`,
      )
      throw new Stop()
    }
    passed.push(`rpc ${rpc}: chain id ${CHAIN_ID}`)

    let identity = target.identityRegistry
    const validation = target.validationRegistry
    let identityLive = false
    let validationLive = false
    for (const [name, addr] of [
      ['identityRegistry', identity],
      ['validationRegistry', validation],
    ] as const) {
      if (!addr) continue
      const c = need(await reads.hasCode(addr), `eth_getCode(${addr})`)
      if (c.ok && c.value) {
        if (name === 'identityRegistry') identityLive = true
        else validationLive = true
        continue
      }
      failures.push(
        `${name} ${addr}: no contract code on chain ${CHAIN_ID}: check the address${name === 'validationRegistry' && identity ? ` or deploy one: svc chain deploy-validation --identity ${identity}` : ''}`,
      )
    }

    // The hub's [chain] names only the ValidationRegistry: its identity registry is the one
    // it checks agents on (getIdentityRegistry, in svc's and the official registry alike).
    if (!identity && validation && validationLive) {
      const i = need(await reads.identityOf(validation), 'getIdentityRegistry')
      if (i.ok) {
        identity = i.value
        const c = need(await reads.hasCode(identity), `eth_getCode(${identity})`)
        identityLive = c.ok && c.value
        if (!identityLive)
          failures.push(
            `identityRegistry ${identity} (named by validationRegistry ${validation}): no contract code on chain ${CHAIN_ID}: check the validation registry address`,
          )
      }
    }

    if (identity && identityLive) {
      const s = need(await reads.supportsErc721(identity), 'supportsInterface')
      if (s.ok && s.value) passed.push(`identityRegistry ${identity}: ERC-721 (ERC-165 ${ERC721_INTERFACE})`)
      else
        failures.push(
          `identityRegistry ${identity}: does not support ERC-721 (ERC-165 ${ERC721_INTERFACE}${s.ok ? ' is false' : `: ${s.revert}`}): not an ERC-8004 IdentityRegistry; check the address`,
        )
    }

    if (validation && validationLive) {
      const v = need(await reads.version(validation), 'getVersion')
      if (v.ok && v.value === EXPECTED_VERSION)
        passed.push(`validationRegistry ${validation}: getVersion ${EXPECTED_VERSION}`)
      else {
        const st = need(await reads.validationStatus(validation, PROBE_HASH), 'getValidationStatus')
        if (st.ok || st.revert === 'unknown')
          passed.push(
            `validationRegistry ${validation}: getValidationStatus answers (unknown hash reverts "unknown")`,
          )
        else
          failures.push(
            `validationRegistry ${validation}: not an ERC-8004 v${EXPECTED_VERSION} ValidationRegistry (getVersion ${v.ok ? `"${v.value}"` : v.revert}; getValidationStatus ${st.revert}; a proxy with no implementation yet?): use one that answers, or deploy svc's: svc chain deploy-validation --identity ${identity ?? '<identity registry>'}`,
          )
      }
      if (identity && target.identityRegistry) {
        const i = need(await reads.identityOf(validation), 'getIdentityRegistry')
        if (i.ok && i.value.toLowerCase() !== identity.toLowerCase())
          failures.push(
            `validationRegistry ${validation}: checks agents on identity registry ${i.value}, not ${identity}: use the pair that belongs together, or deploy one: svc chain deploy-validation --identity ${identity}`,
          )
      }
    }

    if (identity && identityLive && target.agentId !== undefined) {
      const agent = target.agentId
      const o = need(await reads.ownerOf(identity, agent), 'ownerOf')
      if (!o.ok)
        failures.push(
          `agent ${agent} on identityRegistry ${identity}: ${o.revert}: register it (svc chain enrol) or fix agentId`,
        )
      else if (target.device) {
        const dev = target.device
        let allowed = o.value.toLowerCase() === dev.toLowerCase()
        if (!allowed) {
          const a = need(await reads.isApprovedForAll(identity, o.value, dev), 'isApprovedForAll')
          allowed = a.ok && a.value
        }
        if (!allowed) {
          const g = need(await reads.getApproved(identity, agent), 'getApproved')
          allowed = g.ok && g.value.toLowerCase() === dev.toLowerCase()
        }
        if (allowed) passed.push(`device ${dev}: owner or operator of agent ${agent} (owner ${o.value})`)
        else
          failures.push(
            `device ${dev}: neither owner nor approved operator of agent ${agent} on identityRegistry ${identity} (owner ${o.value}): the owner runs svc chain enrol (setApprovalForAll)`,
          )
      }
    }

    if (target.attestorKey && target.attestorAddress) {
      if (target.attestorKey.toLowerCase() === target.attestorAddress.toLowerCase())
        passed.push(`attestor key: ${target.attestorAddress}`)
      else
        failures.push(
          `attestor key is for ${target.attestorKey}, but attestorAddress is ${target.attestorAddress}: use the key of ${target.attestorAddress} (--key-file or $SVC_ATTESTOR_KEY) or fix attestorAddress`,
        )
    }

    const senders: [string, Address][] = []
    if (target.device) senders.push(['device', target.device])
    if (target.attestorKey) senders.push(['attestor', target.attestorKey])
    else if (target.attestorBalance && target.attestorAddress)
      senders.push(['attestor', target.attestorAddress])
    if (senders.length) {
      const n = BigInt(target.transactions ?? 100)
      const fee = need(await reads.maxFeePerGas(), 'eth_gasPrice')
      const monad = MONAD_CHAINS[id.value]
      if (fee.ok) {
        const cost = n * GAS_PER_TX * fee.value
        const txs = `${n} transactions at ${GAS_PER_TX} gas and ${formatGwei(fee.value)} gwei`
        for (const [role, addr] of senders) {
          const b = need(await reads.balance(addr), 'eth_getBalance')
          if (!b.ok) continue
          if (monad && b.value < MONAD_RESERVE + cost)
            warnings.push(
              `${role} ${addr}: balance ${formatEther(b.value)} MON is below ${formatEther(MONAD_RESERVE + cost)} MON, ${monad}'s reserve of ${formatEther(MONAD_RESERVE)} MON plus ${formatEther(cost)} MON for ${txs}: on Monad a transaction that would take an EIP-7702-delegated account (batched sync delegates the device and the attestor) below 10 MON reverts (Monad's docs, "EIP-7702 on Monad"; chain/README.md Batching): fund it`,
            )
          else if (b.value >= cost)
            passed.push(
              `${role} ${addr}: balance ${formatEther(b.value)} covers ${n} transactions${monad ? ` above ${monad}'s ${formatEther(MONAD_RESERVE)} MON reserve` : ''}`,
            )
          else
            warnings.push(
              `${role} ${addr}: balance ${formatEther(b.value)} MON is below ${formatEther(cost)} MON, the cost of ${txs}: fund it`,
            )
        }
      }
    }
  } catch (err) {
    if (!(err instanceof Stop)) throw err
  }
  return { ok: failures.length === 0, failures, warnings, passed, unreachable }
}
