// `svc attestor`: the attestor service alone (the market can also mount it as a plugin).
import { isAbsolute, resolve } from 'node:path'
import { chainFilePath, readChainFile } from '../chain/chain-file.ts'
import { loadAttestorConfig, KEY_ENV } from '../market/attestor/config.ts'
import { startAttestorServer } from '../market/attestor/server.ts'
import { intOption, parseOptions } from './options.ts'
import { svcPaths } from '../hub/paths.ts'
import { type Command, EXIT_OK, UsageError, UserError, untilStopSignal } from './io.ts'

export const ATTESTOR_HELP = `usage: svc attestor [options]

Runs the attestor: checks each line a device sends (signed by the agent's wallet or owner,
requested on the validation registry naming this attestor) and answers it on chain with
validationResponse(requestHash, 100, uri, keccak256(line), "svc-action").

options:
  --chain FILE      chain file (default <SVC_HOME>/chain.json)
  --key-file FILE   the attestor's private key (default: $${KEY_ENV}, else the dev chain's attestor key)
  --host H          listen address (default 127.0.0.1)
  --port N          port (default 8790; 0 = a free one)
  --uri-base URI    responseURI prefix (default svc://attestor)
  -h, --help        this help`

export const command: Command = async (argv, io) => {
  const { values, positionals } = parseOptions(
    argv,
    {
      chain: { type: 'string' },
      'key-file': { type: 'string' },
      host: { type: 'string' },
      port: { type: 'string' },
      'uri-base': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    'svc attestor --help',
  )
  if (values.help) {
    io.out(ATTESTOR_HELP)
    return EXIT_OK
  }
  if (positionals.length > 0)
    throw new UsageError(`unexpected argument "${positionals[0]}" (see svc attestor --help)`)
  const abs = (p: string) => (isAbsolute(p) ? p : resolve(io.cwd, p))
  const chainPath = abs(values.chain ?? chainFilePath(svcPaths(io.env).home))
  const chain = await readChainFile(chainPath)
  if (!chain.ok) throw new UserError(chain.error)
  const cfg = await loadAttestorConfig({
    chain: chain.value,
    env: io.env,
    ...(values['key-file'] ? { keyFile: abs(values['key-file']) } : {}),
    ...(values['uri-base'] ? { uriBase: values['uri-base'] } : {}),
  })
  if (!cfg.ok) throw new UserError(cfg.error)
  const srv = await startAttestorServer(cfg.config, {
    host: values.host ?? '127.0.0.1',
    port: intOption(values.port, 'port') ?? 8790,
    warn: (line) => io.err(line),
  }).catch((err: Error) => {
    // A failed preflight (or a port in use) is one line, not a stack trace.
    throw new UserError(err.message)
  })
  io.out(`attestor ${srv.address} listening on ${srv.url} (registry ${cfg.config.validationRegistry})`)
  await untilStopSignal()
  await srv.close()
  return EXIT_OK
}
