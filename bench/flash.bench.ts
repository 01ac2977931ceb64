// Flashing the companion sketch through optiboot on the emulated Uno (ATmega328P in simavr, held
// to real time, UART0 on a pty) at 115200 baud: runAvrdude (bridge/flash/avrdude.ts: the image
// checked, the reset command run when avrdude announces its port, the progress parsed), beside the
// same write by avrdude run directly, the board reset over the control channel just before it,
// rounds alternated in this one process. Then the floor: the image's bytes on the wire, alone and
// with STK500v1's framing and the verify's read-back, at 115200 8N1.
// The time a board's events stop during `svc board flash` (port released → hello of the new
// image) is the hub's to measure, end to end; this bench leaves a line for it.
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildHarness, emulatedUnoMissing, startEmulatedUno } from '../boards/firmware/simavr/emulated-uno.ts'
import { optibootForUno, optibootMissing } from '../boards/firmware/simavr/optiboot.ts'
import { buildUno } from '../boards/firmware/uno-build.ts'
import { avrdudeMissing, runAvrdude } from '../bridge/flash/avrdude.ts'
import { parseIntelHex } from '../bridge/flash/intel-hex.ts'
import { FLASH_PROFILES, type FlashProfile } from '../bridge/flash/profile.ts'

const ROUNDS = Number(process.env.BENCH_N ?? 5)
const BAUD = 115200
const PAGE = 128

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.floor(s.length / 2)]!
}
const sec = (ms: number): string => `${(ms / 1000).toFixed(2)} s`

async function main(): Promise<void> {
  const missing = emulatedUnoMissing() || optibootMissing() || avrdudeMissing()
  if (missing) {
    process.stdout.write(`flash bench skipped: ${missing}\n`)
    return
  }
  const dir = mkdtempSync(join(tmpdir(), 'svc-flash-bench-'))
  try {
    const built = await buildUno(join(dir, 'build'))
    if (!built.ok) throw new Error(built.error)
    const boot = await optibootForUno(dir)
    if (!boot.ok) throw new Error(boot.error)
    const harness = await buildHarness(dir)
    if (!harness.ok) throw new Error(harness.error)
    const link = join(dir, 'uno')
    const hex = built.build.hex
    const uno = await startEmulatedUno({ harness: harness.exe, elf: hex, link, boot: boot.value.hex })
    const profile: FlashProfile = { ...FLASH_PROFILES.uno!, reset: { kind: 'command', argv: uno.resetArgv } }

    // The baseline: avrdude alone, as a user would run it, the reset pulsed just before.
    const direct = async (): Promise<{ ms: number; write: number; verify: number }> => {
      const t0 = performance.now()
      await uno.reset()
      const args = [
        '-c',
        'arduino',
        '-p',
        'm328p',
        '-b',
        String(BAUD),
        '-P',
        link,
        '-D',
        '-U',
        `flash:w:${hex}:i`,
      ]
      const child = spawn('avrdude', args, { stdio: ['ignore', 'ignore', 'pipe'] })
      let err = ''
      child.stderr.on('data', (b: Buffer) => {
        err += b.toString('utf8')
      })
      const code = await new Promise<number | null>((r) => child.once('close', r))
      const ms = performance.now() - t0
      if (code !== 0) throw new Error(`avrdude exited with ${code}: ${err.slice(-800)}`)
      // avrdude's own times for its Writing and Reading (verify) bars.
      const bar = (name: string): number =>
        Number(new RegExp(`${name} \\|[# ]*\\| 100% ([\\d.]+)s`).exec(err)?.[1] ?? NaN) * 1000
      return { ms, write: bar('Writing'), verify: bar('Reading') }
    }
    const ours = async (): Promise<{ ms: number; tries: number }> => {
      const t0 = performance.now()
      const r = await runAvrdude({ port: link, profile, ops: [{ op: 'write', path: hex }] })
      if (!r.ok) throw new Error(r.error)
      return { ms: performance.now() - t0, tries: r.tries }
    }

    const directMs: number[] = []
    const writeBar: number[] = []
    const verifyBar: number[] = []
    const oursMs: number[] = []
    let extraTries = 0
    for (let i = 0; i < ROUNDS; i++) {
      // Alternate which goes first, so neither always follows the other's watchdog reset.
      const order = i % 2 === 0 ? ['direct', 'ours'] : ['ours', 'direct']
      for (const which of order) {
        if (which === 'direct') {
          const d = await direct()
          directMs.push(d.ms)
          writeBar.push(d.write)
          verifyBar.push(d.verify)
        } else {
          const o = await ours()
          oursMs.push(o.ms)
          extraTries += o.tries - 1
        }
      }
    }

    const image = parseIntelHex(readFileSync(hex, 'utf8'), { where: hex })
    if (!image.ok) throw new Error(image.error)
    const size = image.value.size
    const pages = Math.ceil(size / PAGE)
    // STK500v1 per page: LOAD_ADDRESS (4 bytes, 2 back), PROG_PAGE (4 + 128 + 1, 2 back); the
    // verify: LOAD_ADDRESS again, READ_PAGE (5, 1 + 128 + 1 back). One command waits for its answer.
    const framedWrite = pages * (4 + 2 + (4 + PAGE + 1) + 2)
    const framed = framedWrite + pages * (4 + 2 + 5 + (1 + PAGE + 1))
    const wire = (bytes: number): number => (bytes * 10 * 1000) / BAUD
    const ratio = median(oursMs) / median(directMs)
    process.stdout.write(
      `flash the companion sketch (${size.toLocaleString('en')} B, ${pages} pages) through optiboot ` +
        `(${boot.value.from === 'debian' ? "Debian's hex" : 'rebuilt from Debian optiboot.c'}) on the emulated Uno, ` +
        `write + verify at ${BAUD} baud, ${ROUNDS} rounds alternated:\n` +
        `  runAvrdude (reset on avrdude's port announcement, progress parsed): median ${sec(median(oursMs))}, ` +
        `min ${sec(Math.min(...oursMs))}, max ${sec(Math.max(...oursMs))}${extraTries ? `, ${extraTries} extra tries` : ''}\n` +
        `  baseline, avrdude alone after a reset: median ${sec(median(directMs))}, min ${sec(Math.min(...directMs))}, ` +
        `max ${sec(Math.max(...directMs))}; of which its own bars, median: Writing ${sec(median(writeBar))}, ` +
        `Reading (the verify) ${sec(median(verifyBar))}\n` +
        `  runAvrdude / avrdude alone: ${ratio.toFixed(2)}x\n` +
        `  the floor at ${BAUD} 8N1: the image alone ${sec(wire(size))}; with STK500v1 framing, the write ` +
        `${sec(wire(framedWrite))} and the verify's read-back ${sec(wire(framed - framedWrite))} ` +
        `(${framed.toLocaleString('en')} B in all, ${sec(wire(framed))})\n` +
        '  board events stopped during `svc board flash` (release → hello of the new image): measured end to end by the hub, not here\n' +
        `  halts: ${uno.halts.length}\n`,
    )
    await uno.kill()
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

await main()
