// Test helper: the official ERC-8004 reference registries (test/fixtures/erc8004-official/,
// unchanged from erc-8004/erc-8004-contracts) compiled by solc-js against OpenZeppelin 5.4.0
// from npm, and deployed the way their own tests do: an ERC1967Proxy over HardhatMinimalUUPS,
// then upgradeToAndCall to the real implementation. Compiled in memory once per test file
// (OpenZeppelin takes solc-js a while); nothing is cached on disk.
import { readFile, readdir } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { type Abi, type Address, type Hex, encodeFunctionData } from 'viem'
import type { SvcPublicClient, SvcWalletClient } from '../../chain/clients.ts'

const here = dirname(fileURLToPath(import.meta.url))
export const OFFICIAL_DIR = join(here, '..', 'fixtures', 'erc8004-official')
const require = createRequire(import.meta.url)

export type OfficialName =
  | 'IdentityRegistryUpgradeable'
  | 'ValidationRegistryUpgradeable'
  | 'HardhatMinimalUUPS'
  | 'ERC1967Proxy'
export type OfficialArtifacts = Record<OfficialName, { abi: Abi; bytecode: Hex }>

let memo: Promise<OfficialArtifacts> | undefined

export function compileOfficial(): Promise<OfficialArtifacts> {
  memo ??= compile()
  return memo
}

async function compile(): Promise<OfficialArtifacts> {
  const dir = join(OFFICIAL_DIR, 'contracts')
  const sources: Record<string, { content: string }> = {}
  for (const f of (await readdir(dir)).filter((f) => f.endsWith('.sol')).sort())
    sources[f] = { content: await readFile(join(dir, f), 'utf8') }
  const solc = require('solc') as { compile(input: string, cb: { import(p: string): unknown }): string }
  const findImports = (p: string) => {
    try {
      // Only OpenZeppelin's npm packages: a fixture importing anything else is an error.
      if (!p.startsWith('@openzeppelin/')) return { error: `not found: ${p}` }
      return { contents: require('node:fs').readFileSync(require.resolve(p), 'utf8') as string }
    } catch (err) {
      return { error: (err as Error).message }
    }
  }
  const out = JSON.parse(
    solc.compile(
      JSON.stringify({
        language: 'Solidity',
        sources,
        settings: {
          optimizer: { enabled: true, runs: 200 },
          evmVersion: 'cancun',
          outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } },
        },
      }),
      { import: findImports },
    ),
  ) as {
    errors?: { severity: string; formattedMessage: string }[]
    contracts?: Record<string, Record<string, { abi: Abi; evm: { bytecode: { object: string } } }>>
  }
  const errors = (out.errors ?? []).filter((e) => e.severity === 'error')
  if (errors.length) throw new Error(`solc: ${errors.map((e) => e.formattedMessage).join('\n')}`)
  const result = {} as OfficialArtifacts
  for (const name of [
    'IdentityRegistryUpgradeable',
    'ValidationRegistryUpgradeable',
    'HardhatMinimalUUPS',
    'ERC1967Proxy',
  ] as const) {
    const c = out.contracts?.[`${name}.sol`]?.[name]
    if (!c) throw new Error(`solc produced no ${name}`)
    result[name] = { abi: c.abi, bytecode: `0x${c.evm.bytecode.object}` }
  }
  return result
}

async function deploy(
  wallet: SvcWalletClient,
  pub: SvcPublicClient,
  a: { abi: Abi; bytecode: Hex },
  args: unknown[] = [],
): Promise<Address> {
  const hash = await wallet.deployContract({ abi: a.abi, bytecode: a.bytecode, args } as never)
  const r = await pub.waitForTransactionReceipt({ hash })
  if (r.status !== 'success' || !r.contractAddress) throw new Error(`deploy failed: ${hash}`)
  return r.contractAddress
}

async function send(wallet: SvcWalletClient, pub: SvcPublicClient, to: Address, data: Hex): Promise<void> {
  const hash = await wallet.sendTransaction({ to, data })
  const r = await pub.waitForTransactionReceipt({ hash })
  if (r.status !== 'success') throw new Error(`transaction reverted: ${hash}`)
}

/** A proxy over HardhatMinimalUUPS, initialised with `identity` (the placeholder their deploy starts from). */
export async function deployPlaceholderProxy(
  wallet: SvcWalletClient,
  pub: SvcPublicClient,
  identity: Address,
): Promise<Address> {
  const a = await compileOfficial()
  const minimal = await deploy(wallet, pub, a.HardhatMinimalUUPS)
  const init = encodeFunctionData({
    abi: a.HardhatMinimalUUPS.abi,
    functionName: 'initialize',
    args: [identity],
  })
  return deploy(wallet, pub, a.ERC1967Proxy, [minimal, init])
}

/** Both official registries behind ERC1967 proxies, upgraded from the placeholder as their tests do. */
export async function deployOfficial(
  wallet: SvcWalletClient,
  pub: SvcPublicClient,
): Promise<{ identityRegistry: Address; validationRegistry: Address }> {
  const a = await compileOfficial()
  const zero = '0x0000000000000000000000000000000000000000'
  const identityRegistry = await deployPlaceholderProxy(wallet, pub, zero)
  const identityImpl = await deploy(wallet, pub, a.IdentityRegistryUpgradeable)
  await send(
    wallet,
    pub,
    identityRegistry,
    encodeFunctionData({
      abi: a.IdentityRegistryUpgradeable.abi,
      functionName: 'upgradeToAndCall',
      args: [
        identityImpl,
        encodeFunctionData({ abi: a.IdentityRegistryUpgradeable.abi, functionName: 'initialize', args: [] }),
      ],
    }),
  )
  const validationRegistry = await deployPlaceholderProxy(wallet, pub, identityRegistry)
  const validationImpl = await deploy(wallet, pub, a.ValidationRegistryUpgradeable)
  await send(
    wallet,
    pub,
    validationRegistry,
    encodeFunctionData({
      abi: a.ValidationRegistryUpgradeable.abi,
      functionName: 'upgradeToAndCall',
      args: [
        validationImpl,
        encodeFunctionData({
          abi: a.ValidationRegistryUpgradeable.abi,
          functionName: 'initialize',
          args: [identityRegistry],
        }),
      ],
    }),
  )
  return { identityRegistry, validationRegistry }
}
