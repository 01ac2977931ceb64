// `svc chain dev`: a local chain for development. Starts anvil (chain id 10143, loopback),
// deploys the registries, registers the demo agent, starts the attestor, writes the chain file
// (<SVC_HOME>/chain.json and --out FILE), then runs until Ctrl-C / SIGTERM and stops anvil.
import { isAbsolute, resolve } from 'node:path'
import { chainFilePath } from '../chain/chain-file.ts'
import { writeChainFile } from '../hub/files/chain-file.ts'
import { enrolDevice, keptChain, startDevChain } from '../chain/dev.ts'
import { loadOrCreateDeviceKey, readDeviceKey } from '../hub/attest/device-key.ts'
import { loadAttestorConfig } from '../market/attestor/config.ts'
import { startAttestorServer } from '../market/attestor/server.ts'
import { intOption, parseOptions } from './options.ts'
import { svcPaths } from '../hub/paths.ts'
import { type Command, EXIT_OK, UsageError, untilStopSignal } from './io.ts'

export const CHAIN_HELP = `usage: svc chain dev [options]
       svc chain enrol [options]              enrol this hub's device on a real network (--help)
       svc chain check [--json]               check the chain before trusting it (--help)
       svc chain deploy-validation [options]  deploy svc's ValidationRegistry (--help)

Starts a local chain (anvil, chain id 10143) with the ERC-8004 registries deployed, a demo
agent (id 0) whose wallet and approved operator is this hub's device key (<SVC_HOME>/device.key,
created if missing), and the attestor; writes the chain file and runs until interrupted.

options:
  --port N            anvil's port (default: a free one)
  --host H            listen address (default 127.0.0.1)
  --attestor-port N   the attestor's port (default: a free one)
  --no-attestor       do not start the attestor
  --out FILE          also write the chain file here (always written to <SVC_HOME>/chain.json)
  --json              print the chain file on stdout instead of a summary
  --fresh             start a new chain (the kept one in <SVC_HOME>/chain is thrown away)

The chain is kept in <SVC_HOME>/chain/anvil-state.json: a restart keeps every registry row,
agent and payment. svc start uses the same one.
  -h, --help          this help`

// The real-network commands live in chain-network/, one file each.
const NETWORK_COMMANDS: Record<string, () => Promise<Command>> = {
  enrol: async () => (await import('./chain-network/enrol.ts')).enrolCommand(await passphraseInput()),
  check: async () => (await import('./chain-network/check.ts')).checkCommand,
  'deploy-validation': async () =>
    (await import('./chain-network/deploy-validation.ts')).deployValidationCommand(await passphraseInput()),
}

async function passphraseInput() {
  const { promptHidden } = await import('./hub-user.ts')
  return {
    readStdin: async () => {
      let text = ''
      for await (const chunk of process.stdin) {
        text += String(chunk)
        if (text.includes('\n') || text.length > 4096) break
      }
      return text
    },
    prompt: process.stdin.isTTY ? promptHidden : null,
  }
}

export const command: Command = async (argv, io) => {
  const sub =
    argv[0] !== undefined && Object.hasOwn(NETWORK_COMMANDS, argv[0]) ? NETWORK_COMMANDS[argv[0]] : undefined
  if (sub) return (await sub())(argv.slice(1), io)
  const { values, positionals } = parseOptions(
    argv,
    {
      port: { type: 'string' },
      host: { type: 'string' },
      'attestor-port': { type: 'string' },
      'no-attestor': { type: 'boolean' },
      out: { type: 'string' },
      json: { type: 'boolean' },
      fresh: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    'svc chain --help',
  )
  if (values.help || positionals.length === 0) {
    io.out(CHAIN_HELP)
    return values.help ? EXIT_OK : 2
  }
  if (positionals[0] !== 'dev' || positionals.length > 1)
    throw new UsageError(`unknown command "${positionals.join(' ')}" (see svc chain --help)`)
  const port = intOption(values.port, 'port')
  const attestorPort = intOption(values['attestor-port'], 'attestor-port')
  const host = values.host ?? '127.0.0.1'

  const paths = svcPaths(io.env)
  const chain = await startDevChain({
    ...(port !== undefined ? { port } : {}),
    host,
    ...(await keptChain(paths.home, values.fresh === true)),
  })
  let closeAttestor: (() => Promise<void>) | undefined
  try {
    const info = { ...chain.info }
    // The hub's own device key (created if missing) becomes the agent's wallet and operator,
    // so `svc hub` + `svc attest sync` work against this chain with no further setup.
    const signer = await loadOrCreateDeviceKey(paths.deviceKey)
    await enrolDevice(chain.info as Required<typeof chain.info>, (await readDeviceKey(paths.deviceKey))!)
    if (!values['no-attestor']) {
      const cfg = await loadAttestorConfig({ chain: chain.info })
      if (!cfg.ok) throw new Error(cfg.error)
      const srv = await startAttestorServer(cfg.config, {
        host,
        ...(attestorPort !== undefined ? { port: attestorPort } : {}),
      })
      closeAttestor = srv.close
      info.attestorUrl = srv.url
    }
    const files = [chainFilePath(paths.home)]
    if (values.out) files.push(isAbsolute(values.out) ? values.out : resolve(io.cwd, values.out))
    for (const f of files) await writeChainFile(f, info)
    if (values.json) io.out(JSON.stringify({ ...info, pid: chain.pid, device: signer.address }))
    else {
      io.out(
        [
          `anvil          ${info.rpcUrl} (chain id ${info.chainId}, pid ${chain.pid}; ${chain.kept ? 'kept from the last run' : 'new'})`,
          `identity       ${info.identityRegistry}`,
          `validation     ${info.validationRegistry}`,
          `agent          ${info.agentId} (owner ${chain.accounts.owner.address}; wallet + operator: this hub's device ${signer.address})`,
          `attestor       ${info.attestorAddress}${info.attestorUrl ? ` at ${info.attestorUrl}` : ''}`,
          `chain file     ${files.join(', ')}`,
          'Ctrl-C stops the chain.',
        ].join('\n'),
      )
    }
    await untilStopSignal()
  } finally {
    await closeAttestor?.()
    await chain.stop()
  }
  return EXIT_OK
}
