// `svc`: the command line. Each command group lives in its own file and is loaded only when
// used, so `svc sop validate` does not pay for the broker, the chain client or the market.
import { type CliIo, type Command, EXIT_USAGE, UserError, endQuietlyOnClosedPipe, processIo } from './io.ts'

interface Group {
  summary: string
  load: () => Promise<{ command: Command }>
}

const GROUPS: Record<string, Group> = {
  sop: {
    summary: 'list, validate, show, graph, run SOPs; pending/approve/deny/logs on the hub',
    load: () => import('./sop.ts'),
  },
  hub: { summary: 'run the hub daemon (broker, bridge, triggers, engine)', load: () => import('./hub.ts') },
  board: {
    summary: 'simulate a board on a pseudo-terminal or the mock binding',
    load: () => import('./board.ts'),
  },
  chain: {
    summary: 'start a local chain with the registries deployed (chain dev)',
    load: () => import('./chain.ts'),
  },
  attest: { summary: 'attested lines: status, export, sync, verify-line', load: () => import('./attest.ts') },
  attestor: { summary: 'run the attestor service alone', load: () => import('./attestor.ts') },
  market: { summary: 'run the marketplace server', load: () => import('./market.ts') },
  listing: {
    summary: 'create, sync and show listings of attested lines',
    load: () => import('./listing.ts'),
  },
  start: {
    summary: 'run the whole product locally: chain, market, attestor, hub, simulated board',
    load: () => import('./start.ts'),
  },
  key: { summary: 'store the device bearer key', load: () => import('./key.ts') },
}

export function help(): string {
  const width = Math.max(...Object.keys(GROUPS).map((k) => k.length))
  const lines = Object.entries(GROUPS).map(([name, g]) => `  ${name.padEnd(width)}  ${g.summary}`)
  return [
    'usage: svc <command> [args] [--json]',
    '',
    'commands:',
    ...lines,
    '',
    'svc <command> --help for more.',
  ].join('\n')
}

export async function main(argv: string[], io: CliIo = processIo): Promise<number> {
  const [name, ...rest] = argv
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    io.out(help())
    return name === undefined ? EXIT_USAGE : 0
  }
  const group = GROUPS[name]
  if (!group) {
    io.err(`svc: unknown command "${name}"\n\n${help()}`)
    return EXIT_USAGE
  }
  try {
    const { command } = await group.load()
    return await command(rest, io)
  } catch (err) {
    if (err instanceof UserError) {
      io.err(`svc ${name}: ${err.message}`)
      return err.exitCode
    }
    throw err
  }
}

const isEntry = process.argv[1] !== undefined && import.meta.url === new URL(`file://${process.argv[1]}`).href
if (isEntry) {
  endQuietlyOnClosedPipe()
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code
    },
    (err: unknown) => {
      process.stderr.write(
        `svc: internal error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
      )
      process.exitCode = 70
    },
  )
}
