// `svc listing create|sync|status`: datasets of attested lines, queued on the device and posted
// to the market with the bearer key (market/API.md, "POST /api/agent/listings").
import { isAbsolute, resolve } from 'node:path'
import { chainFilePath, readChainFile } from '../chain/chain-file.ts'
import { type AttestStore, attestStorePath, openAttestStore } from '../hub/attest/store.ts'
import { MAX_PREVIEW_LINES } from '../records/preview-field.ts'
import { intOption, parseOptions } from './options.ts'
import { loadConfig } from '../hub/daemon/config.ts'
import { readChainSection } from '../hub/daemon/real-parts.ts'
import { createListing } from '../hub/listing/create.ts'
import { checkMarketUrl, readKey, readMarketUrl } from '../hub/listing/market-key.ts'
import { loadAll } from '../hub/listing/queue.ts'
import type { ListingEntry } from '../hub/listing/record.ts'
import { type ListingSyncSummary, syncListings } from '../hub/listing/sync.ts'
import { svcPaths } from '../hub/paths.ts'
import { type CliIo, type Command, EXIT_FAIL, EXIT_OK, UsageError, UserError } from './io.ts'
import { errorText } from '../errors/text.ts'

export const LISTING_HELP = `usage: svc listing <command> [options]

commands:
  create   build a listing from attested lines and queue it (posted at once when online)
           --title T --summary S --description D --machine-type vending|arm|drone|amr|sensor|humanoid|other
           --license research|commercial|audit --price P (native currency, e.g. 0.05)
           [--image FILE]      cover image (JPEG, PNG or WebP)
           [--preview N]       publish the first N lines (0-5) as samples on the listing page
           [--from N --to M]   only attested lines N..M (1-based, inclusive; default all)
           [--market URL]      market origin (default: the one stored by svc key set --market)
           [--agent ID]        agent id (default: [chain] agent_id in hub.toml, else the chain file)
           [--no-sync]         only queue it
  sync     post queued listings now (the running hub does this by itself every few seconds)
  status   every listing on this device: state, rows, attempts, URL or last error

options:
  --json       machine-readable output
  -h, --help   this help

A listing is refused, and nothing is queued, when a line in the range is not attested yet
(blank request-hash line), when a request hash appears twice, or when the two files differ in
line count; the message names the line.`

const SPEC = {
  title: { type: 'string' },
  summary: { type: 'string' },
  description: { type: 'string' },
  'machine-type': { type: 'string' },
  license: { type: 'string' },
  price: { type: 'string' },
  image: { type: 'string' },
  preview: { type: 'string' },
  from: { type: 'string' },
  to: { type: 'string' },
  market: { type: 'string' },
  agent: { type: 'string' },
  'no-sync': { type: 'boolean' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const

type Values = ReturnType<typeof parseOptions<typeof SPEC>>['values']

/** The attestation store, or null when the running hub holds it (LevelDB's lock). */
async function tryStore(io: CliIo): Promise<{ store: AttestStore | null; agentId: string | null }> {
  const loaded = await loadConfig(undefined, io.env)
  if (!loaded.ok) throw new UserError(loaded.error)
  const section = readChainSection(loaded.config.chain)
  let agentId = section.ok && section.sync ? section.sync.agentId : null
  if (agentId === null) {
    const c = await readChainFile(chainFilePath(svcPaths(io.env).home))
    if (c.ok) agentId = c.value.agentId
  }
  const path = attestStorePath(loaded.config.dataDir)
  try {
    return { store: await openAttestStore(path), agentId }
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause
    if (cause?.code === 'LEVEL_LOCKED') return { store: null, agentId }
    throw new UserError(`cannot open the attestation store ${path}: ${errorText(err)}`)
  }
}

function summaryLines(s: ListingSyncSummary): string[] {
  const out = s.posted.map((e) => `posted ${e.id}: ${e.url}`)
  out.push(
    `${s.posted.length} posted, ${s.retrying} waiting to retry, ${s.failed} refused, ${s.waiting} waiting (no key, or a draft for the hub)`,
  )
  return out
}

async function create(io: CliIo, v: Values): Promise<number> {
  const preview = intOption(v.preview, 'preview', 0)
  if (preview !== undefined && preview > MAX_PREVIEW_LINES)
    throw new UsageError(
      `--preview must be a whole number from 0 to ${MAX_PREVIEW_LINES} (got "${v.preview}")`,
    )
  const from = intOption(v.from, 'from', 1)
  const to = intOption(v.to, 'to', 1)
  if (from !== undefined && to !== undefined && to < from)
    throw new UsageError('--to must not be before --from')
  const marketRaw = v.market ?? (await readMarketUrl(io.env))
  if (!marketRaw)
    throw new UsageError('no market: pass --market URL, or store one with svc key set <key> --market URL')
  const market = checkMarketUrl(marketRaw)
  if (!market.ok) throw new UsageError(`--market: ${market.error}`)
  if (v.agent !== undefined && !/^(0|[1-9][0-9]{0,77})$/.test(v.agent))
    throw new UsageError(`--agent must be a decimal agent id (got "${v.agent}")`)
  const home = svcPaths(io.env).home
  const { store, agentId: found } = await tryStore(io)
  const agentId = v.agent ?? found
  try {
    // A draft is built by the running hub, for the agent in its own [chain] section.
    if (agentId === null && store !== null)
      throw new UsageError(
        'no agent id: pass --agent ID, set [chain] agent_id in hub.toml, or run svc chain dev',
      )
    const r = await createListing({
      home,
      fields: {
        title: v.title,
        summary: v.summary,
        description: v.description,
        machineType: v['machine-type'],
        license: v.license,
        priceNative: v.price,
      },
      range: { ...(from !== undefined ? { from: from - 1 } : {}), ...(to !== undefined ? { to } : {}) },
      market: market.url,
      ...(preview !== undefined ? { preview } : {}),
      ...(v.image !== undefined
        ? { imagePath: isAbsolute(v.image) ? v.image : resolve(io.cwd, v.image) }
        : {}),
      store,
      agentId,
    })
    if (!r.ok) throw new UserError(`refused: ${r.error}`)
    let entry: ListingEntry = r.entry
    if (entry.state === 'queued' && !v['no-sync']) {
      const s = await syncListings(
        { home, key: () => readKey(io.env), log: { info: () => undefined, warn: () => undefined } },
        { force: true },
      )
      entry =
        s.posted.find((e) => e.id === entry.id) ??
        (await loadAll(home)).flatMap((l) => (l.ok && l.entry.id === entry.id ? [l.entry] : []))[0] ??
        entry
    }
    if (v.json) io.out(JSON.stringify(entry))
    else if (entry.state === 'posted') io.out(`listed: ${entry.url}`)
    else if (entry.state === 'draft')
      io.out(`queued ${entry.id} as a draft: the running hub builds and posts it (svc listing status)`)
    else
      io.out(
        `queued ${entry.id} (${entry.rows} rows)${entry.lastError ? `; not posted yet: ${entry.lastError}` : ''}; svc listing sync posts it, and the hub does when running`,
      )
    return EXIT_OK
  } finally {
    await store?.close()
  }
}

async function sync(io: CliIo, v: Values): Promise<number> {
  const home = svcPaths(io.env).home
  const key = await readKey(io.env)
  if (key === null)
    throw new UserError(
      `no market key: store one with svc key set <svc_key> (looked in ${svcPaths(io.env).marketKey})`,
    )
  const { store, agentId } = await tryStore(io)
  try {
    const s = await syncListings(
      {
        home,
        key: async () => key,
        ...(store && agentId !== null ? { builder: { store, agentId } } : {}),
        log: { info: () => undefined, warn: (m) => io.err(String(m)) },
      },
      { force: true },
    )
    if (v.json)
      io.out(JSON.stringify({ ...s, posted: s.posted.map((e) => ({ id: e.id, slug: e.slug, url: e.url })) }))
    else for (const l of summaryLines(s)) io.out(l)
    return s.retrying === 0 && s.failed === 0 ? EXIT_OK : EXIT_FAIL
  } finally {
    await store?.close()
  }
}

async function status(io: CliIo, v: Values): Promise<number> {
  const all = await loadAll(svcPaths(io.env).home)
  if (v.json) {
    io.out(JSON.stringify(all.map((l) => (l.ok ? l.entry : { error: l.error }))))
    return EXIT_OK
  }
  if (all.length === 0) io.out('no listings (svc listing create …)')
  for (const l of all) {
    if (!l.ok) {
      io.out(`?        ${l.error}`)
      continue
    }
    const e = l.entry
    const what =
      e.state === 'posted'
        ? e.url
        : e.lastError
          ? `${e.lastError}${e.nextAttemptAt ? ` (next try ${e.nextAttemptAt})` : ''}`
          : e.state === 'draft'
            ? 'the hub builds it'
            : 'waiting to post'
    io.out(
      `${e.state.padEnd(7)}  ${e.id}  ${String(e.rows ?? '-').padStart(5)} rows  ${e.attempts} tries  ${e.fields.title}  ${what}`,
    )
  }
  return EXIT_OK
}

export const command: Command = async (argv, io) => {
  const { values, positionals } = parseOptions(argv, SPEC, 'svc listing --help')
  if (values.help || positionals.length === 0) {
    io.out(LISTING_HELP)
    return values.help ? EXIT_OK : 2
  }
  if (positionals.length > 1)
    throw new UsageError(`unexpected argument "${positionals[1]}" (see svc listing --help)`)
  switch (positionals[0]) {
    case 'create':
      return create(io, values)
    case 'sync':
      return sync(io, values)
    case 'status':
      return status(io, values)
    default:
      throw new UsageError(`unknown command "${positionals[0]}" (see svc listing --help)`)
  }
}
