// `svc board status` and `svc board send`: the boards of the running hub, through its local API
// (hub/api/boards.ts), so they speak through the hub's own port and command queue: a serial
// port has one owner, and one command at a time is what the boards can take.
import type { BoardStats, BridgeStats } from '../bridge/types.ts'
import { NAME_RE } from '../bridge/codec/messages.ts'
import { SUPPORTED_PROTOCOLS, speaksProtocol, splitFirmware } from '../bridge/codec/protocol.ts'
import { callHub } from './hub-client.ts'
import { type CliIo, EXIT_OK, UsageError } from './io.ts'
import { intOption, parseOptions } from './options.ts'
import { errorText } from '../errors/text.ts'

export const STATUS_HELP = `usage: svc board status [--json]

Each board of the running hub: its state (online = it has answered since its port opened;
silent = port open, no answer yet), the firmware its hello named (name, version, and the line
protocol it speaks, marked when the hub does not), and counters: lines, events, garbage,
overlong lines dropped, reconnects, the time of the last event. --json prints the hub's answer
as is.`

export const SEND_HELP = `usage: svc board send <board> <cmd> [args-json] [--timeout MS] [--json]

Sends one command to a board through the running hub and prints the board's answer, e.g.
  svc board send vend1 gpio_write '{"pin":13,"value":1}'
args-json defaults to {}. Exits 1 when the board answers with an error, does not answer
within the timeout (default: hub.toml tools.board_timeout_ms), or is offline.`

export async function boardStatus(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseOptions(
    argv,
    { json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
    'svc board status --help',
  )
  if (values.help) {
    io.out(STATUS_HELP)
    return EXIT_OK
  }
  if (positionals.length > 0)
    throw new UsageError(`unexpected argument "${positionals[0]}"\n\n${STATUS_HELP}`)
  const s = (await callHub(io, 'GET', '/boards')) as BridgeStats
  if (values.json) {
    io.out(JSON.stringify(s, null, 2))
    return EXIT_OK
  }
  const names = Object.keys(s.boards)
  if (names.length === 0) {
    io.out('no boards: hub.toml has no [[boards]]')
    return EXIT_OK
  }
  io.out(formatStatus(s.boards))
  if (s.queue)
    io.out(
      `publish queue: ${s.queue.pending} pending, ${s.queue.inflight} in flight, ${s.queue.dropped} dropped`,
    )
  return EXIT_OK
}

/** One row per board, columns aligned. */
export function formatStatus(boards: Record<string, BoardStats>): string {
  const head = [
    'BOARD',
    'STATE',
    'KIND',
    'FIRMWARE',
    'VERSION',
    'PROTO',
    'LINES',
    'EVENTS',
    'GARBAGE',
    'OVERLONG',
    'RECONNECTS',
    'LAST EVENT',
  ]
  const rows = Object.entries(boards).map(([name, b]) => [
    name,
    b.state,
    b.kind,
    ...firmwareColumns(b),
    String(b.lines),
    String(b.events),
    String(b.garbage),
    String(b.oversized),
    String(b.reconnects),
    b.last_event_at ?? '-',
  ])
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)))
  return [head, ...rows]
    .map((r) =>
      r
        .map((c, i) => c.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n')
}

/** FIRMWARE, VERSION, PROTO: `svc-companion/0.2.0` split in two; any other firmware string whole. */
function firmwareColumns(b: BoardStats): [string, string, string] {
  const split = b.fw === undefined ? undefined : splitFirmware(b.fw)
  const proto =
    b.proto === undefined
      ? '-'
      : speaksProtocol(b.proto)
        ? String(b.proto)
        : `${b.proto} (hub speaks ${SUPPORTED_PROTOCOLS.join(',')})`
  return [split?.name ?? b.fw ?? '-', split?.version ?? b.version ?? '-', proto]
}

export async function boardSend(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseOptions(
    argv,
    { json: { type: 'boolean' }, timeout: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    'svc board send --help',
  )
  if (values.help) {
    io.out(SEND_HELP)
    return EXIT_OK
  }
  const [board, cmd, argsText, ...extra] = positionals
  if (board === undefined || cmd === undefined)
    throw new UsageError(`board and cmd are required\n\n${SEND_HELP}`)
  if (extra.length > 0)
    throw new UsageError(`unexpected argument "${extra[0]}" (put the command's arguments in one JSON object)`)
  if (!NAME_RE.test(board)) throw new UsageError(`board: must match [A-Za-z0-9_.-]{1,64}, got "${board}"`)
  if (!/^[a-z][a-z0-9_]{0,31}$/.test(cmd))
    throw new UsageError(`cmd: must match [a-z][a-z0-9_]{0,31}, got "${cmd}"`)
  let args: unknown = {}
  if (argsText !== undefined) {
    try {
      args = JSON.parse(argsText)
    } catch (err) {
      throw new UsageError(
        `args-json: not JSON (${errorText(err)}); e.g. '{"pin":13,"value":1}', quoted for the shell`,
      )
    }
  }
  const timeout = intOption(values.timeout, 'timeout', 1)
  const answer = (await callHub(io, 'POST', `/boards/${board}/send`, {
    cmd,
    args,
    ...(timeout !== undefined ? { timeout_ms: timeout } : {}),
  })) as { result: unknown }
  io.out(values.json ? JSON.stringify(answer, null, 2) : JSON.stringify(answer.result))
  return EXIT_OK
}
