// `svc chain enrol | check | deploy-validation`: svc on a real network (Monad testnet, or any
// chain 10143 given by --rpc-url and addresses). The owner's key comes from a keystore file and
// a passphrase (prompt, standard input or an environment variable) or a 0600 key file: never an
// argument. Every refusal is one line and changes nothing on chain or on disk.
import { isAbsolute, resolve } from 'node:path'
import { type Address, type Hex, formatEther, isAddress } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { type ChainInfo, chainFilePath, readChainFile } from '../chain/chain-file.ts'
import { writeChainFile } from '../hub/files/chain-file.ts'
import { identityRegistryAbi } from '../chain/abi.generated.ts'
import { publicClientFor, walletClientFor } from '../chain/clients.ts'
import { deployValidationRegistry } from '../chain/deploy.ts'
import { deviceSignature, enrol, enrolledChainInfo } from '../chain/enrol.ts'
import { type KeyResult, readKeyFile, readKeystoreFile } from '../chain/keystore.ts'
import { type NetworkFlags, NETWORKS, resolveNetwork } from '../chain/networks.ts'
import { describeCallError } from '../chain/official-errors.ts'
import { runPreflight } from '../chain/preflight-reads.ts'
import { KEY_ENV } from '../market/attestor/config.ts'
import { readDeviceKey, writeNewDeviceKey } from '../hub/attest/device-key.ts'
import { svcPaths } from '../hub/paths.ts'
import type { PasswordInput } from './hub-user.ts'
import { type CliIo, type Command, EXIT_FAIL, EXIT_OK, UsageError, UserError } from './io.ts'
import { intOption, parseOptions } from './options.ts'

const NETWORK_HELP = `network (a preset, or a custom one; a flag given overrides the preset):
  --network NAME      ${Object.keys(NETWORKS).join(', ')}
  --rpc-url URL       the chain's JSON-RPC endpoint (its chain id must be 10143)
  --identity ADDR     the ERC-8004 IdentityRegistry
  --validation ADDR   the ERC-8004 ValidationRegistry (monad-testnet has no official one yet:
                      give yours, or deploy svc's with svc chain deploy-validation)`

const KEY_HELP = `the owner's key (never an argument):
  --keystore FILE     a Web3 Secret Storage v3 keystore (geth, ethers, cast wallet)
  --key-file FILE     a hex private key in a file only you can read (chmod 600)
  --passphrase-env VAR  the keystore passphrase from environment variable VAR
  --passphrase-stdin  the keystore passphrase from the first line of standard input
                      (otherwise it is asked for at the terminal)`

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

export const CHECK_HELP = `usage: svc chain check [--chain FILE] [--attestor-key-file FILE] [--transactions N] [--json]

Checks the chain the chain file names before trusting it: the RPC answers with chain id 10143,
both registries have code, the ValidationRegistry is ERC-8004 v2.0.0 (or answers
getValidationStatus), the IdentityRegistry is ERC-721, this hub's device is the agent's owner
or operator, the attestor key (if given) is the attestor address, and the device's and the
attestor's balances cover N transactions (default 100); on Monad (chain id 10143, or 143) on top
of Monad's 10 MON reserve, below which a transaction from an EIP-7702-delegated account (batched
sync delegates both) reverts. One line per check; exit status 1 when any fails (a low balance is
a warning).`

export const DEPLOY_VALIDATION_HELP = `usage: svc chain deploy-validation --identity ADDR [network] [owner's key] [--dry-run] [--json]

Deploys svc's own ValidationRegistry (chain/contracts/), checking agents on the given identity
registry, for a network whose official ValidationRegistry is not deployed yet. Prints its
address: pass it to svc chain enrol --validation.

${NETWORK_HELP}

${KEY_HELP}`

const NET_OPTS = {
  network: { type: 'string' },
  'rpc-url': { type: 'string' },
  identity: { type: 'string' },
  validation: { type: 'string' },
} as const
const KEY_OPTS = {
  keystore: { type: 'string' },
  'key-file': { type: 'string' },
  'passphrase-env': { type: 'string' },
  'passphrase-stdin': { type: 'boolean' },
} as const

type KeyFlags = {
  keystore?: string | undefined
  'key-file'?: string | undefined
  'passphrase-env'?: string | undefined
  'passphrase-stdin'?: boolean | undefined
}

function network(values: NetworkFlags) {
  const r = resolveNetwork(values)
  if (!r.ok) throw new UsageError(r.error)
  return r.network
}

async function ownerKey(values: KeyFlags, input: PasswordInput, io: CliIo): Promise<Hex> {
  const abs = (p: string) => (isAbsolute(p) ? p : resolve(io.cwd, p))
  if (values.keystore !== undefined && values['key-file'] !== undefined)
    throw new UsageError('give one of --keystore and --key-file, not both')
  let r: KeyResult
  if (values['key-file'] !== undefined) r = await readKeyFile(abs(values['key-file']))
  else if (values.keystore !== undefined) {
    const env = values['passphrase-env']
    if (env !== undefined && values['passphrase-stdin'])
      throw new UsageError('give one of --passphrase-stdin and --passphrase-env, not both')
    let pass: string
    if (env !== undefined) {
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(env))
        throw new UsageError(`--passphrase-env: "${env}" is not a variable name`)
      const v = io.env[env]
      if (v === undefined)
        throw new UserError(`--passphrase-env: environment variable ${env} is not set (nothing changed)`)
      pass = v
    } else if (values['passphrase-stdin']) {
      pass = (await input.readStdin()).split(/\r?\n/)[0] ?? ''
    } else {
      if (!input.prompt)
        throw new UsageError(
          'no terminal to ask for the passphrase: use --passphrase-stdin or --passphrase-env VAR',
        )
      pass = await input.prompt('Keystore passphrase: ')
    }
    r = await readKeystoreFile(abs(values.keystore), pass)
  } else throw new UsageError('no owner key: give --keystore FILE or --key-file FILE (never the key itself)')
  if (!r.ok) throw new UserError(`${r.error} (nothing changed)`)
  return r.privateKey
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
async function deviceKeyFor(path: string): Promise<{ key: Hex; persist(): Promise<void> }> {
  let existing: Hex | null
  try {
    existing = await readDeviceKey(path)
  } catch (err) {
    throw new UserError((err as Error).message)
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

export function enrolCommand(input: PasswordInput): Command {
  return async (argv, io) => {
    const { values, positionals } = parseOptions(
      argv,
      {
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
      },
      'svc chain enrol --help',
    )
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
    const { key: deviceKey, persist } = await deviceKeyFor(paths.deviceKey)

    if (values['print-signature']) {
      const owner = address(values.owner, 'owner')
      if (agentId === undefined || owner === undefined)
        throw new UsageError('--print-signature needs --agent-id N and --owner ADDR')
      try {
        const sig = await deviceSignature({
          rpcUrl: net.rpcUrl,
          identityRegistry: net.identityRegistry,
          agentId,
          owner,
          deviceKey,
        })
        // The signature names this key: keep it (a new one) before handing the signature out.
        await persist()
        io.out(
          values.json
            ? JSON.stringify(sig)
            : Object.entries(sig)
                .map(([k, v]) => `${k.padEnd(16)} ${v}`)
                .join('\n'),
        )
      } catch (err) {
        const d = describeCallError(err)
        throw new UserError('unreachable' in d ? `rpc ${net.rpcUrl}: ${d.unreachable}` : d.revert)
      }
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
    // No owner key, an agent named: the owner did the steps elsewhere (a browser wallet, the
    // /enrol page); check they are done on chain and write the chain file.
    if (
      values.keystore === undefined &&
      values['key-file'] === undefined &&
      agentId !== undefined &&
      !values['dry-run']
    ) {
      const done = await enrolledElsewhere(net, agentId, deviceKey)
      if (!done.ok) throw new UserError(`${done.error} (nothing changed)`)
      const info = enrolledChainInfo({
        rpcUrl: net.rpcUrl,
        identityRegistry: net.identityRegistry,
        validationRegistry: net.validationRegistry as Address,
        agentId,
        attestorAddress: attestorAddress as Address,
        ...(attestorUrl ? { attestorUrl } : {}),
      })
      await persist()
      const files = [chainFilePath(paths.home)]
      if (values.out) files.push(isAbsolute(values.out) ? values.out : resolve(io.cwd, values.out))
      for (const f of files) await writeChainFile(f, info)
      io.out(
        values.json
          ? JSON.stringify(info)
          : `agent ${agentId}: device already operator and wallet; chain file ${files.join(', ')}`,
      )
      return EXIT_OK
    }
    const key = await ownerKey(values, input, io)
    const device = privateKeyToAccount(deviceKey).address
    const r = await enrol({
      rpcUrl: net.rpcUrl,
      identityRegistry: net.identityRegistry,
      ...(net.validationRegistry ? { validationRegistry: net.validationRegistry } : {}),
      ownerKey: key,
      deviceKey,
      ...(agentId !== undefined ? { agentId } : {}),
      ...(samePrev ? { previousAgentId: BigInt(samePrev.agentId) } : {}),
      agentURI: values['agent-uri'] ?? `svc://agents/${device}`,
      dryRun: values['dry-run'] === true,
      beforeSend: persist,
      log: (l) => io.err(l),
    })
    if (!r.ok) throw new UserError(r.error)

    if (values['dry-run']) {
      if (values.json)
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
      else {
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
      return EXIT_OK
    }

    const info: ChainInfo = enrolledChainInfo({
      rpcUrl: net.rpcUrl,
      identityRegistry: net.identityRegistry,
      validationRegistry: net.validationRegistry as Address,
      agentId: r.agentId as bigint,
      attestorAddress: attestorAddress as Address,
      ...(attestorUrl ? { attestorUrl } : {}),
    })
    const files = [chainFilePath(paths.home)]
    if (values.out) files.push(isAbsolute(values.out) ? values.out : resolve(io.cwd, values.out))
    for (const f of files) await writeChainFile(f, info)
    if (values.json)
      io.out(
        JSON.stringify({
          ...info,
          device: r.device,
          owner: r.owner,
          steps: r.steps.map(({ gas: _g, ...s }) => s),
        }),
      )
    else {
      for (const s of r.steps)
        io.out(
          `${s.status === 'done' ? 'done' : 'skip'}  ${s.step.padEnd(8)} ${s.detail}${s.tx ? ` (${s.tx})` : ''}`,
        )
      io.out(`agent ${info.agentId}, device ${r.device}; chain file ${files.join(', ')}`)
    }
    return EXIT_OK
  }
}

/** Preflight with the device and agent, plus: the device is the agent's wallet. */
async function enrolledElsewhere(
  net: { rpcUrl: string; identityRegistry: Address; validationRegistry?: Address },
  agentId: bigint,
  deviceKey: Hex,
): Promise<{ ok: true } | { ok: false; error: string }> {
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
  if (!r.ok) return { ok: false, error: r.failures[0] as string }
  try {
    const wallet = await pub.readContract({
      address: net.identityRegistry,
      abi: identityRegistryAbi,
      functionName: 'getAgentWallet',
      args: [agentId],
    })
    if (wallet.toLowerCase() !== device.toLowerCase())
      return {
        ok: false,
        error: `device ${device} is not agent ${agentId}'s wallet (it is ${wallet}): the owner sets it (svc chain enrol with the owner's key, or the market's /enrol page with --print-signature)`,
      }
  } catch (err) {
    const d = describeCallError(err)
    return { ok: false, error: 'unreachable' in d ? `rpc ${net.rpcUrl}: ${d.unreachable}` : d.revert }
  }
  return { ok: true }
}

export const checkCommand: Command = async (argv, io) => {
  const { values, positionals } = parseOptions(
    argv,
    {
      chain: { type: 'string' },
      'attestor-key-file': { type: 'string' },
      transactions: { type: 'string' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    'svc chain check --help',
  )
  if (values.help) {
    io.out(CHECK_HELP)
    return EXIT_OK
  }
  if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`)
  const paths = svcPaths(io.env)
  const file = values.chain
    ? isAbsolute(values.chain)
      ? values.chain
      : resolve(io.cwd, values.chain)
    : chainFilePath(paths.home)
  const c = await readChainFile(file)
  if (!c.ok) throw new UserError(c.error)
  const info = c.value
  // The device key is only read here: a check never creates one.
  let device: Address | undefined
  try {
    const k = await readDeviceKey(paths.deviceKey)
    device = k === null ? undefined : privateKeyToAccount(k).address
  } catch (err) {
    // A damaged key is said, not checked as if there were none (hub/files/README.md: Small files).
    throw new UserError((err as Error).message)
  }
  let attestorKey: Address | undefined
  if (values['attestor-key-file'] !== undefined) {
    const f = values['attestor-key-file']
    const k = await readKeyFile(isAbsolute(f) ? f : resolve(io.cwd, f))
    if (!k.ok) throw new UserError(k.error)
    attestorKey = privateKeyToAccount(k.privateKey).address
  } else if (io.env[KEY_ENV]) {
    const raw = io.env[KEY_ENV]!.trim()
    try {
      attestorKey = privateKeyToAccount((raw.startsWith('0x') ? raw : `0x${raw}`) as Hex).address
    } catch {
      throw new UserError(`$${KEY_ENV}: not a valid private key`)
    }
  } else if (info.accounts) attestorKey = info.accounts.attestor.address
  const n = intOption(values.transactions, 'transactions', 1)
  const report = await runPreflight({
    rpcUrl: info.rpcUrl,
    identityRegistry: info.identityRegistry,
    validationRegistry: info.validationRegistry,
    agentId: BigInt(info.agentId),
    attestorAddress: info.attestorAddress,
    attestorBalance: true,
    ...(device ? { device } : {}),
    ...(attestorKey ? { attestorKey } : {}),
    ...(n !== undefined ? { transactions: n } : {}),
  })
  if (values.json) io.out(JSON.stringify({ chainFile: file, ...report }))
  else {
    for (const l of report.passed) io.out(`ok    ${l}`)
    for (const l of report.warnings) io.out(`warn  ${l}`)
    for (const l of report.failures) io.out(`FAIL  ${l}`)
    if (!device) io.out(`note  no device key at ${paths.deviceKey}: the device was not checked`)
  }
  return report.ok ? EXIT_OK : EXIT_FAIL
}

export function deployValidationCommand(input: PasswordInput): Command {
  return async (argv, io) => {
    const { values, positionals } = parseOptions(
      argv,
      {
        ...NET_OPTS,
        ...KEY_OPTS,
        'dry-run': { type: 'boolean' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
      'svc chain deploy-validation --help',
    )
    if (values.help) {
      io.out(DEPLOY_VALIDATION_HELP)
      return EXIT_OK
    }
    if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`)
    if (values.identity === undefined) throw new UsageError('--identity ADDR is required')
    const net = network({ ...values, validation: undefined })
    const pre = await runPreflight({ rpcUrl: net.rpcUrl, identityRegistry: net.identityRegistry })
    if (!pre.ok) throw new UserError(`${pre.failures[0]} (nothing sent)`)
    const key = await ownerKey(values, input, io)
    const pub = publicClientFor(net.rpcUrl, { timeout: 15_000 })
    if (values['dry-run']) {
      io.out(
        `dry run on ${net.rpcUrl}: would deploy svc's ValidationRegistry for identity registry ${net.identityRegistry} from ${privateKeyToAccount(key).address}; nothing sent`,
      )
      return EXIT_OK
    }
    let addr: Address
    try {
      addr = await deployValidationRegistry(
        walletClientFor(net.rpcUrl, key, { timeout: 30_000 }),
        pub,
        net.identityRegistry,
      )
    } catch (err) {
      const d = describeCallError(err)
      throw new UserError('unreachable' in d ? `rpc ${net.rpcUrl}: ${d.unreachable}` : `deploy: ${d.revert}`)
    }
    const post = await runPreflight(
      { rpcUrl: net.rpcUrl, identityRegistry: net.identityRegistry, validationRegistry: addr },
      pub,
    )
    if (!post.ok) throw new UserError(`deployed ${addr}, but ${post.failures[0]}`)
    io.out(
      values.json
        ? JSON.stringify({ validationRegistry: addr, identityRegistry: net.identityRegistry })
        : `validationRegistry ${addr} (identity registry ${net.identityRegistry}); next: svc chain enrol --validation ${addr} …`,
    )
    return EXIT_OK
  }
}
