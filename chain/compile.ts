// Compiles the project's Solidity with solc-js (the npm `solc` package: no network, no native
// binary) and caches the artifacts under chain/build/ keyed by a hash of the sources, the
// compiler version and the settings, so tests pay for solc once per change of a contract.
import { createHash } from 'node:crypto'
import { mkdir, readFile, readdir, rename, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Abi, Hex } from 'viem'

const here = dirname(fileURLToPath(import.meta.url))
export const CONTRACTS_DIR = join(here, 'contracts')
export const BUILD_DIR = join(here, 'build')

export interface Artifact {
  abi: Abi
  bytecode: Hex
}
export type ContractName = 'IdentityRegistry' | 'ValidationRegistry' | 'BatchExecutor'
export type Artifacts = Record<ContractName, Artifact>

const NAMES: ContractName[] = ['IdentityRegistry', 'ValidationRegistry', 'BatchExecutor']
// Cancun: what Monad testnet and anvil both run; newer opcodes would not deploy on Monad.
const SETTINGS = {
  optimizer: { enabled: true, runs: 200 },
  evmVersion: 'cancun',
  outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } },
}
const SOLC_VERSION = createRequire(import.meta.url)('solc/package.json').version as string

interface SolcOutput {
  errors?: { severity: string; formattedMessage: string }[]
  contracts?: Record<string, Record<string, { abi: Abi; evm: { bytecode: { object: string } } }>>
}

async function readSources(): Promise<Record<string, { content: string }>> {
  const files = (await readdir(CONTRACTS_DIR)).filter((f) => f.endsWith('.sol')).sort()
  const sources: Record<string, { content: string }> = {}
  for (const f of files) sources[f] = { content: await readFile(join(CONTRACTS_DIR, f), 'utf8') }
  return sources
}

function cacheKey(sources: Record<string, { content: string }>): string {
  const h = createHash('sha256')
  h.update(SOLC_VERSION)
  h.update(JSON.stringify(SETTINGS))
  for (const [name, { content }] of Object.entries(sources)) h.update(`\0${name}\0${content}`)
  return h.digest('hex').slice(0, 32)
}

let memo: Promise<Artifacts> | undefined

/** The compiled registries; compiles only when no cached artifact matches the current sources. */
export function compileContracts(): Promise<Artifacts> {
  memo ??= load().catch((err: unknown) => {
    memo = undefined
    throw err
  })
  return memo
}

async function load(): Promise<Artifacts> {
  const sources = await readSources()
  const file = join(BUILD_DIR, `artifacts-${cacheKey(sources)}.json`)
  try {
    return JSON.parse(await readFile(file, 'utf8')) as Artifacts
  } catch {
    // not cached yet (or unreadable): compile below
  }
  const artifacts = compile(sources)
  await mkdir(BUILD_DIR, { recursive: true })
  // Write then rename: parallel test files may compile at once, and a reader must never see half a file.
  const tmp = `${file}.${process.pid}.${Date.now()}.tmp`
  await writeFile(tmp, JSON.stringify(artifacts))
  await rename(tmp, file)
  return artifacts
}

function compile(sources: Record<string, { content: string }>): Artifacts {
  const solc = createRequire(import.meta.url)('solc') as { compile(input: string): string }
  const out = JSON.parse(
    solc.compile(JSON.stringify({ language: 'Solidity', sources, settings: SETTINGS })),
  ) as SolcOutput
  const errors = (out.errors ?? []).filter((e) => e.severity === 'error')
  if (errors.length > 0) throw new Error(`solc failed:\n${errors.map((e) => e.formattedMessage).join('\n')}`)
  const result: Partial<Artifacts> = {}
  for (const name of NAMES) {
    const c = out.contracts?.[`${name}.sol`]?.[name]
    if (!c) throw new Error(`solc produced no ${name}`)
    result[name] = { abi: c.abi, bytecode: `0x${c.evm.bytecode.object}` }
  }
  return result as Artifacts
}
