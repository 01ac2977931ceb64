// `svc chain check`: the chain the chain file names, checked before it is trusted (one line per
// check; exit status 1 when any fails). Reads only: it never creates a device key.
import { isAbsolute, resolve } from 'node:path'
import type { Address } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { chainFilePath, readChainFile } from '../../chain/chain-file.ts'
import { readKeyFile } from '../../chain/keystore.ts'
import { parsePrivateKey } from '../../chain/private-key.ts'
import { runPreflight } from '../../chain/preflight-reads.ts'
import { KEY_ENV } from '../../market/attestor/config.ts'
import { readDeviceKey } from '../../hub/attest/device-key.ts'
import { svcPaths } from '../../hub/paths.ts'
import { type Command, EXIT_FAIL, EXIT_OK, UsageError, UserError } from '../io.ts'
import { intOption, parseOptions } from '../options.ts'
import { errorText } from '../../errors/text.ts'

export const CHECK_HELP = `usage: svc chain check [--chain FILE] [--attestor-key-file FILE] [--transactions N] [--json]

Checks the chain the chain file names before trusting it: the RPC answers with chain id 10143,
both registries have code, the ValidationRegistry is ERC-8004 v2.0.0 (or answers
getValidationStatus), the IdentityRegistry is ERC-721, this hub's device is the agent's owner
or operator, the attestor key (if given) is the attestor address, and the device's and the
attestor's balances cover N transactions (default 100); on Monad (chain id 10143, or 143) on top
of Monad's 10 MON reserve, below which a transaction from an EIP-7702-delegated account (batched
sync delegates both) reverts. One line per check; exit status 1 when any fails (a low balance is
a warning).`

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
    throw new UserError(errorText(err))
  }
  let attestorKey: Address | undefined
  if (values['attestor-key-file'] !== undefined) {
    const f = values['attestor-key-file']
    const k = await readKeyFile(isAbsolute(f) ? f : resolve(io.cwd, f))
    if (!k.ok) throw new UserError(k.error)
    attestorKey = privateKeyToAccount(k.privateKey).address
  } else if (io.env[KEY_ENV]) {
    const k = parsePrivateKey(io.env[KEY_ENV]!, `$${KEY_ENV}`)
    if (!k.ok) throw new UserError(k.error)
    attestorKey = k.address
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
