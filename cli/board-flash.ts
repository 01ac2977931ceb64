// `svc board flash <board> <image.hex>` and `svc board flash-history <board>`: a board's firmware
// through the running hub (hub/api/board-flash.ts), which owns the port: it hands the port to
// avrdude, keeps the image it reads back, writes and verifies the new one, waits for the board's
// hello and rolls back when it does not come. The progress is the answer's NDJSON lines: a bar on
// a terminal, a few plain lines otherwise.
import { readFile, stat } from 'node:fs/promises'
import { userInfo } from 'node:os'
import { resolve } from 'node:path'
import { NAME_RE } from '../bridge/codec/names.ts'
import { HEX_TEXT_MAX } from '../hub/flash/flasher.ts'
import type { FlashRecord } from '../hub/flash/history.ts'
import { callHub, fetchHub } from './hub-client.ts'
import { type CliIo, EXIT_FAIL, EXIT_OK, processIo, UsageError, UserError } from './io.ts'
import { intOption, parseOptions } from './options.ts'
import { type FlashProgress, flashBar, flashLine } from './progress-bar.ts'
import { errorText } from '../errors/text.ts'

export const FLASH_HELP = `usage: svc board flash <board> <image.hex> [--downgrade] [--json]

Writes a firmware image (Intel HEX, as avrdude and the Arduino tools write it) to a board through
the running hub and its bootloader. The hub releases the board's port (its events stop, state
"updating"), reads the current image back and keeps it, writes and verifies the new one, takes
the port back and waits for the board's hello with the image's firmware. When verifying fails or
no such hello comes in time, it writes the image it read back again: "rolled back".

  --downgrade   flash an image that speaks an older line protocol than the board does now
  --json        print the outcome as JSON (the history record) instead of a line

The board needs a flash profile in hub.toml ([[boards]] flash = "uno"; hub/README.md, "Board
firmware"). Exits 0 when the new firmware runs, 1 when the flash was refused, failed or rolled back.`

export const HISTORY_HELP = `usage: svc board flash-history <board> [--limit N] [--json]

The board's firmware flashes, newest first: when, who, the image's SHA-256, the firmware before
and after, and the outcome (flashed, rolled back, rollback failed, failed).`

interface DoneLine {
  done: true
  id: string
  board: string
  outcome: FlashRecord['outcome']
  error: string | null
  record: FlashRecord
}

/** What the answer of POST /boards/:board/flash carries, line by line. */
type StreamLine = { started: true; sha256: string } | (FlashProgress & { done?: undefined }) | DoneLine

async function readImage(path: string, cwd: string): Promise<string> {
  const file = resolve(cwd, path)
  let size: number
  try {
    size = (await stat(file)).size
  } catch (err) {
    throw new UsageError(
      `image: cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? errorText(err)}`,
    )
  }
  if (size > HEX_TEXT_MAX)
    throw new UsageError(
      `image: ${path} is ${size} bytes, more than the ${HEX_TEXT_MAX} of Intel HEX the hub takes`,
    )
  const text = await readFile(file, 'utf8')
  if (!/^\s*:/.test(text))
    throw new UsageError(`image: ${path} is not Intel HEX (its first record must start with ":")`)
  return text
}

/** POSTs to the running hub and hands each line of its NDJSON answer to `line`; refusals throw. */
async function streamHub(
  io: CliIo,
  path: string,
  body: object,
  line: (v: StreamLine) => void,
): Promise<void> {
  const { res } = await fetchHub(io, 'POST', path, body)
  if (res.status !== 200 || !res.body) {
    const text = await res.text()
    let error = `the hub answered ${res.status}`
    try {
      error = (JSON.parse(text) as { error?: string }).error ?? error
    } catch {}
    throw new UserError(error)
  }
  const decoder = new TextDecoder()
  let rest = ''
  try {
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      rest += decoder.decode(chunk, { stream: true })
      for (let nl = rest.indexOf('\n'); nl >= 0; nl = rest.indexOf('\n')) {
        const text = rest.slice(0, nl)
        rest = rest.slice(nl + 1)
        if (text.trim() !== '') line(JSON.parse(text) as StreamLine)
      }
    }
  } catch (err) {
    throw new UserError(
      `the connection to the hub broke during the flash (${errorText(err)}); the flash goes on in the hub: see \`svc board flash-history\``,
    )
  }
}

function describe(r: FlashRecord): string {
  const took = r.finished
    ? ` in ${((Date.parse(r.finished) - Date.parse(r.started)) / 1000).toFixed(1)} s`
    : ''
  const what = `${r.from ?? 'unnamed firmware'} → ${r.to ?? 'an image without identity'}`
  const image = `sha256 ${r.sha256.slice(0, 12)}…, ${r.size} bytes`
  if (r.outcome === 'flashed') return `flashed ${r.board}: ${what} (${image})${took}`
  if (r.outcome === 'rolled back')
    return `rolled back ${r.board}: ${r.error}; it runs ${r.from ?? 'its previous image'} again (${image})${took}`
  return `${r.outcome} ${r.board}: ${r.error}`
}

export async function boardFlash(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseOptions(
    argv,
    { downgrade: { type: 'boolean' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
    'svc board flash --help',
  )
  if (values.help) {
    io.out(FLASH_HELP)
    return EXIT_OK
  }
  const [board, image, ...extra] = positionals
  if (board === undefined || image === undefined)
    throw new UsageError(`board and image are required\n\n${FLASH_HELP}`)
  if (extra.length > 0) throw new UsageError(`unexpected argument "${extra[0]}" (one board, one image)`)
  if (!NAME_RE.test(board)) throw new UsageError(`board: must match [A-Za-z0-9_.-]{1,64}, got "${board}"`)
  const hex = await readImage(image, io.cwd)

  const tty = io.err === processIo.err && process.stderr.isTTY === true
  const columns = process.stderr.columns || Number(io.env.COLUMNS) || 80
  const width = Math.max(10, Math.min(30, columns - 40))
  let drawn = false
  let shown = ''
  let done: DoneLine | undefined
  await streamHub(
    io,
    `/boards/${board}/flash`,
    { hex, downgrade: values.downgrade ?? false, by: userInfo().username },
    (l) => {
      if ('started' in l) return
      if (l.done) {
        done = l
        return
      }
      if (tty) {
        process.stderr.write(`\r${flashBar(l, width)}\x1b[K`)
        drawn = true
        return
      }
      // Plain lines: each phase once, and its progress at each quarter.
      const key = `${l.rollback}:${l.phase}:${l.percent === null ? '' : Math.floor(l.percent / 25)}`
      if (key === shown) return
      shown = key
      io.err(flashLine(board, l))
    },
  ).finally(() => {
    if (drawn) process.stderr.write('\n')
  })
  if (!done)
    throw new UserError(
      `the hub ended the answer before the flash did; see \`svc board flash-history ${board}\` for its outcome`,
    )
  const d = done as DoneLine
  if (values.json)
    io.out(JSON.stringify({ board: d.board, outcome: d.outcome, error: d.error, record: d.record }, null, 2))
  else if (d.outcome === 'flashed') io.out(describe(d.record))
  else io.err(describe(d.record))
  return d.outcome === 'flashed' ? EXIT_OK : EXIT_FAIL
}

export async function boardFlashHistory(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseOptions(
    argv,
    { json: { type: 'boolean' }, limit: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    'svc board flash-history --help',
  )
  if (values.help) {
    io.out(HISTORY_HELP)
    return EXIT_OK
  }
  const [board, ...extra] = positionals
  if (board === undefined) throw new UsageError(`board is required\n\n${HISTORY_HELP}`)
  if (extra.length > 0) throw new UsageError(`unexpected argument "${extra[0]}"`)
  if (!NAME_RE.test(board)) throw new UsageError(`board: must match [A-Za-z0-9_.-]{1,64}, got "${board}"`)
  const limit = intOption(values.limit, 'limit', 1)
  const r = (await callHub(
    io,
    'GET',
    `/boards/${board}/flash-history${limit !== undefined ? `?limit=${limit}` : ''}`,
  )) as { board: string; flashes: FlashRecord[] }
  if (values.json) {
    io.out(JSON.stringify(r, null, 2))
    return EXIT_OK
  }
  if (r.flashes.length === 0) {
    io.out(`no flashes of ${board} yet`)
    return EXIT_OK
  }
  const head = ['STARTED', 'OUTCOME', 'FROM', 'TO', 'SHA256', 'WHO']
  const rows = r.flashes.map((f) => [
    f.started,
    f.outcome,
    f.from ?? '-',
    f.to ?? '-',
    f.sha256.slice(0, 12),
    f.who,
  ])
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((x) => x[i]!.length)))
  io.out(
    [head, ...rows]
      .map((x) =>
        x
          .map((c, i) => c.padEnd(widths[i]!))
          .join('  ')
          .trimEnd(),
      )
      .join('\n'),
  )
  for (const f of r.flashes) if (f.error) io.out(`${f.started}  ${f.outcome}: ${f.error}`)
  return EXIT_OK
}
