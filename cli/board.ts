// `svc board simulate`: play a companion board (hello, `message` events at a rate, answers to
// ping/gpio_read/gpio_write/capabilities) on a serial path, for demos and tests without hardware.
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { NAME_RE } from '../bridge/codec/messages.ts'
import { runSimulatorOnPort, type RunningSimulator } from '../boards/simulator/on-port.ts'
import { startPtyPair, type PtyPair } from '../boards/simulator/pty-pair.ts'
import { type CliIo, type Command, EXIT_OK, UsageError, UserError } from './io.ts'
import { parseOptions } from './options.ts'
import { boardSend, boardStatus } from './board-hub.ts'
import { boardFlash, boardFlashHistory } from './board-flash.ts'

const HELP = `usage: svc board status [--json]
       svc board send <board> <cmd> [args-json] [--timeout MS] [--json]
       svc board flash <board> <image.hex> [--downgrade] [--json]
       svc board flash-history <board> [--limit N] [--json]
       svc board simulate [--port PATH] [--rate N] [--name NAME] [--signal SIGNAL]

status, send, flash and flash-history talk to the running hub (its local API): see
\`svc board status --help\`, \`svc board flash --help\`.

simulate plays an svc companion board: says hello, sends \`message\` events at a rate, and answers
ping, gpio_read, gpio_write and capabilities exactly like the firmware in boards/firmware/.

options:
  --port PATH      serial path to play on (e.g. one end of a socat pty pair, or a USB serial
                   adapter looped to the hub). Without it, a socat pty pair is created and the
                   path for the hub is printed (needs socat; see below).
  --rate N         events per second, 0 to 100000 (default 1; 0 = only answer commands)
  --name NAME      the board's name in its hello (default vend1)
  --signal SIGNAL  signal of the events (default coin; text like {"slot":"A1","amount":2})

Without socat, run the board inside the hub instead: \`svc hub --simulate vend1\`, or
\`simulate = true\` in a [[boards]] table. Stops on Ctrl-C (SIGINT) or SIGTERM.`

const OPTIONS = {
  port: { type: 'string' },
  rate: { type: 'string' },
  name: { type: 'string' },
  signal: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const

function parse(argv: string[]) {
  return parseOptions(argv, OPTIONS, 'svc board --help')
}

/** Waits for SIGINT/SIGTERM or `done`, whichever is first. */
function untilStopped(done: Promise<void>): Promise<'signal' | 'closed'> {
  return new Promise((resolve) => {
    const onSignal = (): void => {
      process.off('SIGINT', onSignal)
      process.off('SIGTERM', onSignal)
      resolve('signal')
    }
    process.on('SIGINT', onSignal)
    process.on('SIGTERM', onSignal)
    void done.then(() => {
      process.off('SIGINT', onSignal)
      process.off('SIGTERM', onSignal)
      resolve('closed')
    })
  })
}

async function simulate(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parse(argv)
  if (values.help) {
    io.out(HELP)
    return EXIT_OK
  }
  if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"\n\n${HELP}`)
  const rate = values.rate === undefined ? 1 : Number(values.rate)
  if (!Number.isFinite(rate) || rate < 0 || rate > 100_000)
    throw new UsageError(`--rate: must be a number from 0 to 100000, got "${values.rate}"`)
  const name = values.name ?? 'vend1'
  if (!NAME_RE.test(name)) throw new UsageError(`--name: must match [A-Za-z0-9_.-]{1,64}, got "${name}"`)
  const signal = values.signal ?? 'coin'
  if (!NAME_RE.test(signal))
    throw new UsageError(`--signal: must match [A-Za-z0-9_.-]{1,64}, got "${signal}"`)

  let pair: PtyPair | undefined
  let dir: string | undefined
  let path = values.port
  if (path === undefined) {
    if (spawnSync('socat', ['-V']).status !== 0) {
      throw new UserError(
        'no --port given and socat is not installed, so no pseudo-terminal pair can be made.\n' +
          '  install socat (apt-get install socat), or pass --port PATH,\n' +
          `  or simulate the board inside the hub: svc hub --simulate ${name}`,
      )
    }
    dir = mkdtempSync(join(tmpdir(), 'svc-board-'))
    pair = await startPtyPair(dir)
    path = pair.board
  }
  let sim: RunningSimulator
  try {
    const r = await runSimulatorOnPort(path, name, { rate, signal })
    if (!r.ok) throw new UserError(r.error)
    sim = r.sim
  } catch (err) {
    await pair?.stop()
    if (dir) rmSync(dir, { recursive: true, force: true })
    throw err
  }
  io.out(`simulating board ${name} on ${path}: ${rate} ${signal} event(s)/s; Ctrl-C to stop`)
  if (pair) {
    io.out(
      `connect the hub to ${pair.hub}, e.g. in hub.toml:\n\n[[boards]]\nname = "${name}"\nport = "${pair.hub}"\n`,
    )
  }
  const why = await untilStopped(sim.closed)
  await sim.stop()
  await pair?.stop()
  if (dir) rmSync(dir, { recursive: true, force: true })
  const s = sim.board.stats()
  io.out(
    `stopped (${why === 'signal' ? 'signal' : 'port closed'}): ${s.emitted} events sent, ${s.answered} commands answered`,
  )
  return EXIT_OK
}

export const command: Command = async (argv, io) => {
  const [sub, ...rest] = argv
  if (sub === undefined || sub === '--help' || sub === '-h' || sub === 'help') {
    io.out(HELP)
    return sub === undefined ? 2 : EXIT_OK
  }
  if (sub === 'simulate') return simulate(rest, io)
  if (sub === 'status') return boardStatus(rest, io)
  if (sub === 'send') return boardSend(rest, io)
  if (sub === 'flash') return boardFlash(rest, io)
  if (sub === 'flash-history') return boardFlashHistory(rest, io)
  throw new UsageError(`unknown subcommand "${sub}"\n\n${HELP}`)
}
