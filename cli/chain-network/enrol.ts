// `svc chain enrol`: this hub's device enrolled with an agent on a real network (Monad testnet,
// or any chain 10143 given by --rpc-url and addresses), then the chain file written. Three ways:
// with the owner's key (each step read first, skipped when done), --dry-run (the transactions
// and their cost, nothing sent), or with no owner key and --agent-id (the owner did the steps
// elsewhere: check them). --print-signature hands out the device's setAgentWallet signature.
// Every refusal is one line and changes nothing on chain or on disk.
import { isAbsolute, resolve } from 'node:path'
import { type Address, type Hex, formatEther, isAddress } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { type ChainInfo, chainFilePath, readChainFile } from '../../chain/chain-file.ts'
import { writeChainFile } from '../../hub/files/chain-file.ts'
import { identityRegistryAbi } from '../../chain/abi.generated.ts'
import { publicClientFor } from '../../chain/clients.ts'
import { type EnrolResult, deviceSignature, enrol, enrolledChainInfo } from '../../chain/enrol.ts'
import type { Network } from '../../chain/networks.ts'
import { describeCallError } from '../../chain/official-errors.ts'
import { runPreflight } from '../../chain/preflight-reads.ts'
import { fail, type Result } from '../../errors/codes.ts'
import { errorText } from '../../errors/text.ts'
import { readDeviceKey, writeNewDeviceKey } from '../../hub/attest/device-key.ts'
import { svcPaths } from '../../hub/paths.ts'
import type { PasswordInput } from '../hub-user.ts'
import { type CliIo, type Command, EXIT_OK, UsageError, UserError } from '../io.ts'
import { parseOptions } from '../options.ts'
import { KEY_HELP, KEY_OPTS, NET_OPTS, NETWORK_HELP, network, ownerKey } from './flags.ts'

export const ENROL_HELP = `usage: svc chain enrol [network] [owner's key] [options]

Enrols this hub's device key (<SVC_HOME>/device.key; a new one is written when first used) with an agent on the
chain: registers a new agent (or takes --agent-id), approves the device as the owner's operator
(setApprovalForAll) and sets it as the agent's wallet (setAgentWallet, signed by the device).
Each step is read from the chain first and skipped when already done. Then writes the chain
file (<SVC_HOME>/chain.json) the hub, the attestor and the market read.

${NETWORK_HELP}

${KEY_HELP}

options:
  --agent-id N        enrol into this agent (the owner's key must own it); with no owner key,
                      only check the owner did the steps elsewhere and write the chain file
  --agent-uri URI     the new agent's URI (default svc://agents/<device address>)
  --attestor ADDR     the validator whose answers count (default: the chain file's, when it
                      names the same identity registry)
  --attestor-url URL  where the hub posts lines to be attested (default: likewise)
  --out FILE          also write the chain file here
  --dry-run           print the transactions with their estimated gas and cost; send nothing
  --print-signature   print the device's setAgentWallet signature for --agent-id and --owner
                      (for an owner whose key is in a browser wallet); needs no owner key
  --owner ADDR        the agent's owner (with --print-signature)
  --json              machine-readable output
  -h, --help          this help`

const SPEC = {
  ...NET_OPTS,
  ...KEY_OPTS,
  'agent-id': { type: 'string' },
  'agent-uri': { type: 'string' },
  attestor: { type: 'string' },
  'attestor-url': { type: 'string' },
  out: { type: 'string' },
  'dry-run': { type: 'boolean' },
  'print-signature': { type: 'boolean' },
  owner: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const

type DeviceKey = { key: Hex; persist(): Promise<void> }
/** Where the chain file goes: the home's, and --out's. */
type ChainFiles = { home: string; out: string | undefined; cwd: string }

export function enrolCommand(input: PasswordInput): Command {
  return async (argv, io) => {
    const { values, positionals } = parseOptions(argv, SPEC, 'svc chain enrol --help')
    if (values.help) {
      io.out(ENROL_HELP)
      return EXIT_OK
    }
    if (positionals.length > 0)
      throw new UsageError(
        `unexpected argument "${positionals[0]}": the key is never an argument (see svc chain enrol --help)`,
      )
    const net = network(values)
    const agentId = agentIdOption(values['agent-id'])
    const paths = svcPaths(io.env)
    const device = await deviceKeyFor(paths.deviceKey)
    const json = values.json === true

    if (values['print-signature']) {
      const owner = address(values.owner, 'owner')
      if (agentId === undefined || owner === undefined)
        throw new UsageError('--print-signature needs --agent-id N and --owner ADDR')
      await printSignature(net, agentId, owner, device, json, io)
      return EXIT_OK
    }

    const fileNow = await readChainFile(chainFilePath(paths.home))
    const prev = fileNow.ok ? fileNow.value : undefined
    const samePrev =
      prev && prev.identityRegistry.toLowerCase() === net.identityRegistry.toLowerCase() ? prev : undefined
    // Defaults only from a chain file for the same registry: another network's attestor is no default.
    const attestorAddress = address(values.attestor, 'attestor') ?? samePrev?.attestorAddress
    const attestorUrl = values['attestor-url'] ?? samePrev?.attestorUrl
    if (attestorUrl !== undefined && !/^https?:\/\//.test(attestorUrl))
      throw new UsageError(`--attestor-url ${attestorUrl}: not an http(s) URL`)
    if (!values['dry-run']) {
      if (!net.validationRegistry)
        throw new UsageError(
          `no validation registry for ${net.name}: give --validation ADDR, or deploy one: svc chain deploy-validation --identity ${net.identityRegistry}`,
        )
      if (!attestorAddress)
        throw new UsageError('no attestor: give --attestor ADDR (the validator whose answers count)')
    }
    const chainInfo = (id: bigint): ChainInfo =>
      enrolledChainInfo({
        rpcUrl: net.rpcUrl,
        identityRegistry: net.identityRegistry,
        validationRegistry: net.validationRegistry as Address,
        agentId: id,
        attestorAddress: attestorAddress as Address,
        ...(attestorUrl ? { attestorUrl } : {}),
      })
    const files: ChainFiles = { home: paths.home, out: values.out, cwd: io.cwd }

    // No owner key, an agent named: the owner did the steps elsewhere (a browser wallet, the
    // /enrol page); check they are done on chain and write the chain file.
    if (
      values.keystore === undefined &&
      values['key-file'] === undefined &&
      agentId !== undefined &&
      !values['dry-run']
    ) {
      const done = await enrolledElsewhere(net, agentId, device.key)
      if (!done.ok) throw new UserError(`${done.error} (nothing changed)`)
      const info = chainInfo(agentId)
      await device.persist()
      const written = await writeChainFiles(files, info)
      io.out(
        json
          ? JSON.stringify(info)
          : `agent ${agentId}: device already operator and wallet; chain file ${written.join(', ')}`,
      )
      return EXIT_OK
    }

    const key = await ownerKey(values, input, io)
    const r = await enrol({
      rpcUrl: net.rpcUrl,
      identityRegistry: net.identityRegistry,
      ...(net.validationRegistry ? { validationRegistry: net.validationRegistry } : {}),
      ownerKey: key,
      deviceKey: device.key,
      ...(agentId !== undefined ? { agentId } : {}),
      ...(samePrev ? { previousAgentId: BigInt(samePrev.agentId) } : {}),
      agentURI: values['agent-uri'] ?? `svc://agents/${privateKeyToAccount(device.key).address}`,
      dryRun: values['dry-run'] === true,
      beforeSend: device.persist,
      log: (l) => io.err(l),
    })
    if (!r.ok) throw new UserError(r.error)
    if (values['dry-run']) {
      printDryRun(r, net, json, io)
      return EXIT_OK
    }
    const info = chainInfo(r.agentId as bigint)
    const written = await writeChainFiles(files, info)
    printEnrolled(r, info, written, json, io)
    return EXIT_OK
  }
}

function address(v: string | undefined, flag: string): Address | undefined {
  if (v === undefined) return undefined
  if (!isAddress(v, { strict: false })) throw new UsageError(`--${flag} ${v}: not an address`)
  return v as Address
}

function agentIdOption(v: string | undefined): bigint | undefined {
  if (v === undefined) return undefined
  if (!/^(0|[1-9][0-9]{0,77})$/.test(v))
    throw new UsageError(`--agent-id must be a decimal agent id (got "${v}")`)
  return BigInt(v)
}

/**
 * The hub's device key. A hub without one gets a new key, held in memory and written (0600,
 * never over another) by `persist`, just before the first transaction names it: a refused or
 * dry run leaves nothing on disk.
 */
async function deviceKeyFor(path: string): Promise<DeviceKey> {
  let existing: Hex | null
  try {
    existing = await readDeviceKey(path)
  } catch (err) {
    throw new UserError(errorText(err))
  }
  if (existing !== null) return { key: existing, persist: async () => {} }
  const key = generatePrivateKey()
  let written = false
  return {
    key,
    persist: async () => {
      if (written) return
      // Exclusive: a hub starting meanwhile must not end up with a different key than the one enrolled.
      await writeNewDeviceKey(path, key)
      written = true
    },
  }
}

/** --print-signature: the device's setAgentWallet signature, for an owner who sends it elsewhere. */
async function printSignature(
  net: Network,
  agentId: bigint,
  owner: Address,
  device: DeviceKey,
  json: boolean,
  io: CliIo,
): Promise<void> {
  try {
    const sig = await deviceSignature({
      rpcUrl: net.rpcUrl,
      identityRegistry: net.identityRegistry,
      agentId,
      owner,
      deviceKey: device.key,
    })
    // The signature names this key: keep it (a new one) before handing the signature out.
    await device.persist()
    io.out(
      json
        ? JSON.stringify(sig)
        : Object.entries(sig)
            .map(([k, v]) => `${k.padEnd(16)} ${v}`)
            .join('\n'),
    )
  } catch (err) {
    const d = describeCallError(err)
    throw new UserError('unreachable' in d ? `rpc ${net.rpcUrl}: ${d.unreachable}` : d.revert)
  }
}

/** Preflight with the device and agent, plus: the device is the agent's wallet. */
async function enrolledElsewhere(net: Network, agentId: bigint, deviceKey: Hex): Promise<Result> {
  const device = privateKeyToAccount(deviceKey).address
  const pub = publicClientFor(net.rpcUrl, { timeout: 15_000 })
  const r = await runPreflight(
    {
      rpcUrl: net.rpcUrl,
      identityRegistry: net.identityRegistry,
      ...(net.validationRegistry ? { validationRegistry: net.validationRegistry } : {}),
      agentId,
      device,
    },
    pub,
  )
  // Not unreachable: a step is not done on chain (or the network is not one to enrol on).
  if (!r.ok) return fail(r.unreachable ? 'UNREACHABLE' : 'CONFLICT', r.failures[0] as string)
  try {
    const wallet = await pub.readContract({
      address: net.identityRegistry,
      abi: identityRegistryAbi,
      functionName: 'getAgentWallet',
      args: [agentId],
    })
    if (wallet.toLowerCase() !== device.toLowerCase())
      return fail(
        'CONFLICT',
        `device ${device} is not agent ${agentId}'s wallet (it is ${wallet}): the owner sets it (svc chain enrol with the owner's key, or the market's /enrol page with --print-signature)`,
      )
  } catch (err) {
    const d = describeCallError(err)
    return 'unreachable' in d
      ? fail('UNREACHABLE', `rpc ${net.rpcUrl}: ${d.unreachable}`)
      : fail('CHAIN_REVERTED', d.revert)
  }
  return { ok: true }
}

/** The chain file written to the home and to --out; returns where. */
async function writeChainFiles(f: ChainFiles, info: ChainInfo): Promise<string[]> {
  const files = [chainFilePath(f.home)]
  if (f.out) files.push(isAbsolute(f.out) ? f.out : resolve(f.cwd, f.out))
  for (const file of files) await writeChainFile(file, info)
  return files
}

type Enrolled = Extract<EnrolResult, { ok: true }>

function printDryRun(r: Enrolled, net: Network, json: boolean, io: CliIo): void {
  if (json) {
    io.out(
      JSON.stringify({
        owner: r.owner,
        device: r.device,
        maxFeePerGas: r.maxFeePerGas.toString(),
        steps: r.steps.map((s) => ({
          ...s,
          ...(s.gas !== undefined
            ? { gas: s.gas.toString(), cost: formatEther(s.gas * r.maxFeePerGas) }
            : {}),
        })),
      }),
    )
    return
  }
  io.out(`dry run on ${net.rpcUrl}: owner ${r.owner}, device ${r.device}; nothing sent`)
  let total = 0n
  for (const s of r.steps) {
    if (s.status === 'skipped') io.out(`  skip   ${s.step.padEnd(8)} ${s.detail}`)
    else {
      total += s.gas ?? 0n
      io.out(
        `  send   ${s.step.padEnd(8)} ${s.detail}  ${s.gas !== undefined ? `gas ${s.gas}, up to ${formatEther(s.gas * r.maxFeePerGas)} MON` : 'gas: estimated once the agent exists'}`,
      )
    }
  }
  io.out(`  total  up to ${formatEther(total * r.maxFeePerGas)} MON at the current max fee`)
}

function printEnrolled(r: Enrolled, info: ChainInfo, files: string[], json: boolean, io: CliIo): void {
  if (json) {
    io.out(
      JSON.stringify({
        ...info,
        device: r.device,
        owner: r.owner,
        steps: r.steps.map(({ gas: _g, ...s }) => s),
      }),
    )
    return
  }
  for (const s of r.steps)
    io.out(
      `${s.status === 'done' ? 'done' : 'skip'}  ${s.step.padEnd(8)} ${s.detail}${s.tx ? ` (${s.tx})` : ''}`,
    )
  io.out(`agent ${info.agentId}, device ${r.device}; chain file ${files.join(', ')}`)
}
