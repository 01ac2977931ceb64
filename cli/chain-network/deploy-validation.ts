// `svc chain deploy-validation`: svc's own ValidationRegistry deployed for a network whose
// official one is not deployed yet. Checked before (the identity registry) and after (the new
// registry answers as one); a refusal sends nothing.
import type { Address } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { publicClientFor, walletClientFor } from '../../chain/clients.ts'
import { deployValidationRegistry } from '../../chain/deploy.ts'
import { describeCallError } from '../../chain/official-errors.ts'
import { runPreflight } from '../../chain/preflight-reads.ts'
import type { PasswordInput } from '../hub-user.ts'
import { type Command, EXIT_OK, UsageError, UserError } from '../io.ts'
import { parseOptions } from '../options.ts'
import { KEY_HELP, KEY_OPTS, NET_OPTS, NETWORK_HELP, network, ownerKey } from './flags.ts'

export const DEPLOY_VALIDATION_HELP = `usage: svc chain deploy-validation --identity ADDR [network] [owner's key] [--dry-run] [--json]

Deploys svc's own ValidationRegistry (chain/contracts/), checking agents on the given identity
registry, for a network whose official ValidationRegistry is not deployed yet. Prints its
address: pass it to svc chain enrol --validation.

${NETWORK_HELP}

${KEY_HELP}`

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
