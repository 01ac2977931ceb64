// What `svc chain enrol` and `svc chain deploy-validation` share: the network flags and the
// owner's key flags, their help text, and reading them. The owner's key comes from a keystore
// file and a passphrase (prompt, standard input or an environment variable) or a 0600 key file:
// never an argument.
import { isAbsolute, resolve } from 'node:path'
import type { Hex } from 'viem'
import { type KeyResult, readKeyFile, readKeystoreFile } from '../../chain/keystore.ts'
import { type NetworkFlags, NETWORKS, resolveNetwork } from '../../chain/networks.ts'
import type { PasswordInput } from '../hub-user.ts'
import { type CliIo, UsageError, UserError } from '../io.ts'

export const NETWORK_HELP = `network (a preset, or a custom one; a flag given overrides the preset):
  --network NAME      ${Object.keys(NETWORKS).join(', ')}
  --rpc-url URL       the chain's JSON-RPC endpoint (its chain id must be 10143)
  --identity ADDR     the ERC-8004 IdentityRegistry
  --validation ADDR   the ERC-8004 ValidationRegistry (monad-testnet has no official one yet:
                      give yours, or deploy svc's with svc chain deploy-validation)`

export const KEY_HELP = `the owner's key (never an argument):
  --keystore FILE     a Web3 Secret Storage v3 keystore (geth, ethers, cast wallet)
  --key-file FILE     a hex private key in a file only you can read (chmod 600)
  --passphrase-env VAR  the keystore passphrase from environment variable VAR
  --passphrase-stdin  the keystore passphrase from the first line of standard input
                      (otherwise it is asked for at the terminal)`

export const NET_OPTS = {
  network: { type: 'string' },
  'rpc-url': { type: 'string' },
  identity: { type: 'string' },
  validation: { type: 'string' },
} as const

export const KEY_OPTS = {
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

export function network(values: NetworkFlags) {
  const r = resolveNetwork(values)
  if (!r.ok) throw new UsageError(r.error)
  return r.network
}

export async function ownerKey(values: KeyFlags, input: PasswordInput, io: CliIo): Promise<Hex> {
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
