// `svc attest status|export|sync|verify-line`: the device's attested lines on the command line.
import { readFile } from 'node:fs/promises'
import { isAbsolute, resolve } from 'node:path'
import { type Address, isAddress } from 'viem'
import { type ChainInfo, chainFilePath, readChainFile } from '../chain/chain-file.ts'
import { publicClientFor } from '../chain/clients.ts'
import { loadOrCreateDeviceKey } from '../hub/attest/device-key.ts'
import { type AttestStatus, attestStatus } from '../hub/attest/api.ts'
import { type ExportResult, exportAttestations } from '../hub/attest/export.ts'
import type { SyncProgressFigures } from '../hub/attest/sync-status.ts'
import { type AttestStore, attestStorePath, openAttestStore } from '../hub/attest/store.ts'
import { createAttestSync } from '../hub/attest/sync.ts'
import { verifyLine } from '../hub/attest/verify-line.ts'
import { callHub } from './hub-client.ts'
import { progressBar, progressLine } from './progress-bar.ts'
import { intOption, parseOptions } from './options.ts'
import { svcPaths } from '../hub/paths.ts'
import { type CliIo, type Command, EXIT_FAIL, EXIT_OK, UsageError, UserError, processIo } from './io.ts'
import { errorText } from '../errors/text.ts'

export const ATTEST_HELP = `usage: svc attest <command> [options]

commands:
  status                       lines pending / requested / attested (and failed), and what the
                               hub's sync is doing (waiting, stuck, progress)
  export --out DIR             write operations.jsonl and operation-requests.txt (line n <-> line n;
                               a request line is blank until its line is attested)
         [--from N] [--to N]   only lines N..M (1-based, inclusive)
  sync                         send pending lines to the chain and the attestor now, with progress
         [--batch N]           most lines per transaction (default 400 batched, 50 one per line)
         [--attestor URL]      attestor origin (default: attestorUrl in the chain file)
  verify-line --data FILE --requests FILE --line N --agent ID
                               check one line against the validation registry (five conditions)
         [--attestor ADDR]     expected validator (default: attestorAddress in the chain file)
         [--rpc URL] [--registry ADDR]  override the chain file

options:
  --chain FILE   chain file (default <SVC_HOME>/chain.json)
  --json         machine-readable output
  -h, --help     this help`

const SPEC = {
  out: { type: 'string' },
  from: { type: 'string' },
  to: { type: 'string' },
  batch: { type: 'string' },
  attestor: { type: 'string' },
  data: { type: 'string' },
  requests: { type: 'string' },
  line: { type: 'string' },
  agent: { type: 'string' },
  rpc: { type: 'string' },
  registry: { type: 'string' },
  chain: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const

type Values = ReturnType<typeof parseOptions<typeof SPEC>>['values']

/**
 * Runs `fn` on the store, or, when the running hub holds the store's lock, `viaHub` (its local
 * API). Without `viaHub` a locked store is an error naming the cause.
 */
async function withStore<T>(
  io: CliIo,
  fn: (s: AttestStore) => Promise<T>,
  viaHub?: () => Promise<T>,
): Promise<T> {
  const path = attestStorePath(svcPaths(io.env).data)
  let store: AttestStore
  try {
    store = await openAttestStore(path)
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause
    if ((err as { code?: string }).code === 'LEVEL_DATABASE_NOT_OPEN' && cause?.code === 'LEVEL_LOCKED') {
      if (viaHub) return viaHub()
      throw new UserError(
        `the attestation store ${path} is in use by the running hub, which syncs it by itself (see \`svc attest status\`); stop the hub to sync by hand`,
      )
    }
    throw new UserError(`cannot open the attestation store ${path}: ${errorText(err)}`)
  }
  try {
    return await fn(store)
  } finally {
    await store.close()
  }
}

async function chainInfo(io: CliIo, v: Values): Promise<ChainInfo> {
  const p = v.chain ? abs(io, v.chain) : chainFilePath(svcPaths(io.env).home)
  const r = await readChainFile(p)
  if (!r.ok) throw new UserError(r.error)
  return r.value
}

const abs = (io: CliIo, p: string) => (isAbsolute(p) ? p : resolve(io.cwd, p))

async function status(io: CliIo, v: Values): Promise<number> {
  const c: AttestStatus = await withStore(
    io,
    async (s) => attestStatus(s, null),
    async () => (await callHub(io, 'GET', '/attest/status')) as AttestStatus,
  )
  if (v.json) io.out(JSON.stringify(c))
  else {
    if (c.sync) io.out(`sync       ${c.sync.line}`)
    io.out(`lines      ${c.total}`)
    io.out(
      `pending    ${c.pending + c.sending}${c.sending ? ` (${c.sending} request transactions out)` : ''}`,
    )
    io.out(`requested  ${c.requested}`)
    io.out(`attested   ${c.attested}`)
    if (c.failed) io.out(`failed     ${c.failed}`)
  }
  return EXIT_OK
}

async function exportCmd(io: CliIo, v: Values): Promise<number> {
  if (!v.out) throw new UsageError('export needs --out DIR')
  const from = intOption(v.from, 'from', 1)
  const to = intOption(v.to, 'to', 1)
  if (from !== undefined && to !== undefined && to < from)
    throw new UsageError('--to must not be before --from')
  const out = abs(io, v.out)
  const range = { ...(from ? { from: from - 1 } : {}), ...(to ? { to } : {}) }
  const r = await withStore(
    io,
    (s) => exportAttestations(s, out, range),
    async () => (await callHub(io, 'POST', '/attest/export', { out, ...range })) as ExportResult,
  )
  if (v.json) io.out(JSON.stringify(r))
  else io.out(`${r.lines} lines (${r.attested} attested) → ${r.dataPath}, ${r.requestsPath}`)
  return EXIT_OK
}

async function syncCmd(io: CliIo, v: Values): Promise<number> {
  const chain = await chainInfo(io, v)
  const attestorUrl = v.attestor ?? chain.attestorUrl
  if (!attestorUrl)
    throw new UsageError('no attestor URL: pass --attestor URL or put attestorUrl in the chain file')
  const batchSize = intOption(v.batch, 'batch', 1)
  const signer = await loadOrCreateDeviceKey(svcPaths(io.env).deviceKey)
  // A bar redrawn in place on a terminal; plain lines, at most one a second, otherwise.
  const tty = io.err === processIo.err && process.stderr.isTTY === true
  let lastLine = 0
  let drawn = false
  const columns = process.stderr.columns || Number(io.env.COLUMNS) || 80
  // The bar's cells: what the figures leave of the terminal's width, 10 to 30.
  const barWidth = (fig: SyncProgressFigures) =>
    Math.max(10, Math.min(30, columns - 1 - (progressBar(fig, 0).length - 2) - 2))
  const report = await withStore(io, async (store) => {
    const sync = createAttestSync({
      store,
      chain,
      attestorUrl,
      signer,
      ...(batchSize !== undefined ? { batchSize } : {}),
      log: {
        progress: (p) => {
          if (p.phase !== 'attest' || v.json) return
          const fig = sync.status().progress
          if (!fig) return
          if (tty) {
            // Redrawn in place: back to column 0, the bar sized to the terminal, the rest of
            // the line cleared (a shorter figure must not leave the old one's tail).
            process.stderr.write(`\r${progressBar(fig, barWidth(fig))}\x1b[K`)
            drawn = true
          } else if (Date.now() - lastLine >= 1000 || fig.done === fig.total) {
            lastLine = Date.now()
            io.err(progressLine(fig))
          }
        },
        warn: (m) => {
          if (drawn) process.stderr.write('\n')
          drawn = false
          io.err(String(m))
        },
      },
    })
    try {
      const r = await sync.runOnce()
      if (drawn) process.stderr.write('\n')
      return r
    } catch (err) {
      if (drawn) process.stderr.write('\n')
      throw new UserError(`sync stopped: ${errorText(err)} (nothing is lost; run it again)`)
    }
  })
  if (v.json) io.out(JSON.stringify(report))
  else
    io.out(
      `${report.requested} requested, ${report.attested} attested, ${report.failed} failed, ${report.remaining} remaining`,
    )
  return report.remaining === 0 && report.failed === 0 ? EXIT_OK : EXIT_FAIL
}

async function verifyCmd(io: CliIo, v: Values): Promise<number> {
  for (const k of ['data', 'requests', 'line', 'agent'] as const)
    if (!v[k]) throw new UsageError(`verify-line needs --${k}`)
  const line = intOption(v.line, 'line', 1)!
  if (!/^(0|[1-9][0-9]*)$/.test(v.agent!))
    throw new UsageError(`--agent must be a decimal agent id (got "${v.agent}")`)
  let rpc = v.rpc
  let registry = v.registry
  let attestor = v.attestor
  if (!rpc || !registry || !attestor) {
    const chain = await chainInfo(io, v)
    rpc ??= chain.rpcUrl
    registry ??= chain.validationRegistry
    attestor ??= chain.attestorAddress
  }
  if (!isAddress(registry, { strict: false })) throw new UsageError('--registry must be an address')
  if (!isAddress(attestor, { strict: false })) throw new UsageError('--attestor must be an address')
  const read = async (p: string, what: string) => {
    try {
      return await readFile(abs(io, p), 'utf8')
    } catch (err) {
      throw new UserError(
        `cannot read the ${what} file ${p}: ${(err as NodeJS.ErrnoException).code ?? errorText(err)}`,
      )
    }
  }
  const r = await verifyLine({
    dataText: await read(v.data!, 'data'),
    requestsText: await read(v.requests!, 'requests'),
    line,
    agentId: v.agent!,
    attestor: attestor as Address,
    validationRegistry: registry as Address,
    client: publicClientFor(rpc),
  })
  if (v.json) {
    io.out(JSON.stringify(r, (_k, x: unknown) => (typeof x === 'bigint' ? x.toString() : x)))
    return r.ok ? EXIT_OK : EXIT_FAIL
  }
  if (r.ok) {
    io.out(`line ${line}: verified`)
    io.out(`  paramsHash   ${r.paramsHash}`)
    io.out(`  requestHash  ${r.requestHash}`)
    io.out(
      `  validator ${r.row.validator}, agent ${r.row.agentId}, response ${r.row.response}, tag "${r.row.tag}"`,
    )
    return EXIT_OK
  }
  io.out(`line ${line}: NOT verified (step ${r.step}${r.condition ? `, condition ${r.condition}` : ''})`)
  io.out(`  ${r.error}`)
  return EXIT_FAIL
}

export const command: Command = async (argv, io) => {
  const { values, positionals } = parseOptions(argv, SPEC, 'svc attest --help')
  const sub = positionals[0]
  if (values.help || sub === undefined) {
    io.out(ATTEST_HELP)
    return values.help ? EXIT_OK : 2
  }
  if (positionals.length > 1)
    throw new UsageError(`unexpected argument "${positionals[1]}" (see svc attest --help)`)
  switch (sub) {
    case 'status':
      return status(io, values)
    case 'export':
      return exportCmd(io, values)
    case 'sync':
      return syncCmd(io, values)
    case 'verify-line':
      return verifyCmd(io, values)
    default:
      throw new UsageError(`unknown command "${sub}" (see svc attest --help)`)
  }
}
