// Flashing through the bootloader, for real: Debian's avrdude 7.1 talks STK500v1 over the emulated
// Uno's pseudo-terminal to optiboot 4.4 in the boot section of an ATmega328P in simavr, which
// writes the flash with SPM (simavr's avr_flash). The board is reset into optiboot by its reset
// line (SIGUSR1 to the harness, a flash profile's reset command). Two builds of the companion
// sketch that differ in version and name: the first runs, the second is written and verified over
// it, read back byte for byte, and says its hello after a reset.
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { SerialPort } from 'serialport'
import t, { type Test } from 'tap'
import {
  buildHarness,
  type EmulatedUno,
  emulatedUnoMissing,
  startEmulatedUno,
} from '../../boards/firmware/simavr/emulated-uno.ts'
import { BOOT_START, optibootForUno, optibootMissing } from '../../boards/firmware/simavr/optiboot.ts'
import { buildUno } from '../../boards/firmware/uno-build.ts'
import { avrdudeMissing, type FlashProgress, runAvrdude } from '../../bridge/flash/avrdude.ts'
import { parseIntelHex, toIntelHex } from '../../bridge/flash/intel-hex.ts'
import { FLASH_PROFILES, type FlashProfile } from '../../bridge/flash/profile.ts'
import { tempDir } from '../helpers/tmp.ts'
import { waitFor } from '../helpers/wait.ts'

const missing = emulatedUnoMissing() || optibootMissing() || avrdudeMissing()
if (missing) t.comment(`bootloader test skipped: ${missing}`)
const skip = missing ? `${missing}: the bootloader test needs it` : false

/** The board's serial line as lines of text; opened before a reset so nothing it says is lost. */
async function listen(path: string) {
  const port = new SerialPort({ path, baudRate: 115200, autoOpen: false })
  await new Promise<void>((resolve, reject) => port.open((err) => (err ? reject(err) : resolve())))
  let text = ''
  port.on('data', (d: Buffer) => {
    text += d.toString('latin1')
  })
  return {
    lines: () => text.split('\n').slice(0, -1),
    send: (line: string) => port.write(`${line}\n`),
    close: () => new Promise<void>((r) => port.close(() => r())),
  }
}

/** Waits for what `probe` finds in the lines heard so far; the error quotes them. */
async function heard<T>(
  line: { lines(): string[] },
  probe: (lines: string[]) => T,
  what: string,
): Promise<T> {
  try {
    return await waitFor(() => probe(line.lines()), what)
  } catch (err) {
    throw new Error(`${(err as Error).message}; heard ${JSON.stringify(line.lines()).slice(0, 2000)}`)
  }
}

// A reset can cut the sketch off mid-line, so a hello is found wherever it starts on a line.
const hellos = (lines: string[]) =>
  lines.flatMap((l) => {
    const m = /\{"event":"hello",[^{}]*\}$/.exec(l)
    return m ? [JSON.parse(m[0]) as { board: string; fw: string }] : []
  })

const pong = (lines: string[], id: number) => lines.find((l) => l.startsWith(`{"id":${id},`))

/** Whether `got` holds `want` from `at`, and if not, the first address where they differ. */
function sameBytes(t: Test, got: Uint8Array, want: Uint8Array, at: number, what: string): void {
  const n = want.length - at
  const a = got.subarray(at, at + n)
  const b = want.subarray(at)
  let i = 0
  while (i < n && a[i] === b[i]) i++
  t.equal(i === n ? 'same' : `differs at 0x${(at + i).toString(16)}`, 'same', what)
}

async function imageOf(path: string): Promise<Uint8Array> {
  const r = parseIntelHex(await readFile(path, 'utf8'), { where: path })
  if (!r.ok) throw new Error(r.error)
  return r.value.bytes
}

t.test(
  'avrdude writes, verifies and reads back a new sketch through optiboot on the emulated Uno',
  { skip },
  async (t) => {
    const dir = await tempDir(t)
    const [one, two] = await Promise.all([
      buildUno(join(dir, 'one'), { defines: ['SVC_FW_VERSION="0.1.9"'] }),
      buildUno(join(dir, 'two'), { defines: ['SVC_FW_VERSION="0.3.0"', 'SVC_BOARD="vend2"'] }),
    ])
    if (!one.ok) throw new Error(one.error)
    if (!two.ok) throw new Error(two.error)
    const boot = await optibootForUno(dir)
    if (!boot.ok) throw new Error(boot.error)
    if (boot.value.note) t.comment(boot.value.note)
    const harness = await buildHarness(dir)
    if (!harness.ok) throw new Error(harness.error)

    const link = join(dir, 'uno')
    // The first sketch as Intel HEX, the way a board receives an image.
    const uno: EmulatedUno = await startEmulatedUno({
      harness: harness.exe,
      elf: one.build.hex,
      link,
      boot: boot.value.hex,
      paused: true,
    })
    t.teardown(() => uno.kill())
    const profile: FlashProfile = { ...FLASH_PROFILES.uno!, reset: { kind: 'command', argv: uno.resetArgv } }

    let line = await listen(link)
    await uno.ask('run', 'running')
    await heard(line, (l) => hellos(l).length > 0, 'the first sketch says hello at power-on')
    t.same(hellos(line.lines()), [{ event: 'hello', board: 'vend1', fw: 'svc-companion/0.1.9', proto: 1 }])
    await line.close()

    const events: FlashProgress[] = []
    const before = join(dir, 'before.hex')
    const r = await runAvrdude({
      port: link,
      profile,
      ops: [
        { op: 'read', path: before },
        { op: 'write', path: two.build.hex },
      ],
      onProgress: (e) => events.push(e),
    })
    if (!r.ok) t.comment(r.output)
    // More than one means a reset command missed optiboot's window and the session was tried again.
    else t.comment(`sessions: ${r.tries}`)
    t.ok(r.ok, r.ok ? 'read, written and verified' : r.error)
    if (!r.ok) return
    const image1 = await imageOf(one.build.hex)
    const image2 = await imageOf(two.build.hex)
    t.equal(r.bytes, image2.length, 'avrdude wrote the whole image')
    for (const phase of ['reading', 'writing', 'verifying'] as const) {
      t.equal(events.filter((e) => e.phase === phase).at(-1)?.percent, 100, `${phase} reported up to 100%`)
    }

    const read = await imageOf(before)
    sameBytes(t, read, image1, 0, 'what was read before the write is the first sketch')
    const bootBytes = await imageOf(boot.value.hex)
    sameBytes(t, read, bootBytes, BOOT_START, 'and optiboot above it')

    const after = join(dir, 'after.hex')
    const back = await runAvrdude({ port: link, profile, ops: [{ op: 'read', path: after }] })
    t.ok(back.ok, back.ok ? 'read back' : back.error)
    sameBytes(t, await imageOf(after), image2, 0, 'avrdude reads back the second sketch')
    const flash = await uno.dumpFlash(join(dir, 'flash.bin'))
    sameBytes(t, flash, image2, 0, "the emulator's flash holds the second sketch")
    sameBytes(t, flash, bootBytes, BOOT_START, 'and optiboot, untouched')
    t.equal(
      uno.signalResets(),
      r.tries + (back.ok ? back.tries : 0),
      'each session began with a reset by SIGUSR1',
    )

    // What the sketch said before the reset (it restarted when the session ended) may be heard in
    // part; a board that runs says nothing more after its hello than it is asked for.
    line = await listen(link)
    await uno.reset()
    await heard(
      line,
      (l) => hellos(l).some((h) => h.fw === 'svc-companion/0.3.0'),
      'the second sketch says hello after a reset',
    )
    t.same(hellos(line.lines()).at(-1), {
      event: 'hello',
      board: 'vend2',
      fw: 'svc-companion/0.3.0',
      proto: 1,
    })
    line.send('{"id":7,"cmd":"ping","args":{}}')
    await heard(line, (l) => pong(l, 7), 'an answer to ping')
    const seen = hellos(line.lines()).length
    line.send('{"id":8,"cmd":"ping","args":{}}')
    await heard(line, (l) => pong(l, 8), 'an answer to a second ping')
    t.equal(
      hellos(line.lines()).length,
      seen,
      'no hello between two pings: the sketch runs, not reset over and over',
    )
    t.same(JSON.parse(pong(line.lines(), 8)!), { id: 8, ok: true, result: 'pong' })
    await line.close()
    t.same(uno.halts, [], 'the MCU never halted')
  },
)

t.test(
  'bad input: a garbage image, an image too big, a reset that fails, a board with no bootloader',
  { skip },
  async (t) => {
    const dir = await tempDir(t)
    const built = await buildUno(join(dir, 'build'))
    if (!built.ok) throw new Error(built.error)
    const harness = await buildHarness(dir)
    if (!harness.ok) throw new Error(harness.error)
    const link = join(dir, 'uno')
    // No bootloader: the sketch alone, as on a chip flashed by ISP.
    const uno = await startEmulatedUno({ harness: harness.exe, elf: built.build.elf, link })
    t.teardown(() => uno.kill())
    const profile: FlashProfile = { ...FLASH_PROFILES.uno!, reset: { kind: 'command', argv: uno.resetArgv } }

    const garbage = join(dir, 'garbage.hex')
    await writeFile(
      garbage,
      `${toIntelHex(Uint8Array.of(1, 2, 3))}`.replace(':00000001FF', 'this is not hex'),
    )
    const g = await runAvrdude({ port: link, profile, ops: [{ op: 'write', path: garbage }] })
    t.match(g, {
      ok: false,
      code: 'BAD_INPUT',
      phase: 'checking',
      error: `${garbage} line 2: not an Intel HEX record ("this is not hex")`,
    })

    const big = join(dir, 'big.hex')
    await writeFile(big, toIntelHex(new Uint8Array(32_257)))
    const b = await runAvrdude({ port: link, profile, ops: [{ op: 'write', path: big }] })
    t.match(b, {
      ok: false,
      code: 'TOO_LARGE',
      phase: 'checking',
      error: /line \d+: data at 0x7e00-0x7e00, past the end \(0x7dff\): the board takes at most 32256 bytes$/,
    })

    const f = await runAvrdude({
      port: link,
      profile: { ...profile, reset: { kind: 'command', argv: ['false'] } },
      ops: [{ op: 'read', path: join(dir, 'x.hex') }],
    })
    t.match(f, {
      ok: false,
      code: 'UPSTREAM_FAILED',
      phase: 'reset',
      error: 'avrdude failed while resetting the board: reset command `false` exited with 1',
    })

    // Reset, and the sketch starts at once: nothing answers avrdude's GET_SYNC.
    const n = await runAvrdude({
      port: link,
      profile,
      tries: 1,
      ops: [{ op: 'read', path: join(dir, 'y.hex') }],
    })
    t.match(n, {
      ok: false,
      code: 'UNREACHABLE',
      phase: 'connecting',
      error:
        /^avrdude failed while connecting to the bootloader: stk500_recv\(\) error: programmer is not responding$/,
    })
    if (!n.ok) t.match(n.output, /not in sync/, "avrdude's last lines come with it")
    t.equal(
      uno.signalResets(),
      1,
      'the failed reset command never reached the board; the other session reset it once',
    )
  },
)

t.test(
  'the harness refuses a bootloader that runs past the end of flash, naming the line',
  { skip },
  async (t) => {
    const dir = await tempDir(t)
    const harness = await buildHarness(dir)
    if (!harness.ok) throw new Error(harness.error)
    const app = join(dir, 'app.hex')
    await writeFile(app, toIntelHex(Uint8Array.of(0xff, 0xcf))) // rjmp .-2
    const boot = join(dir, 'boot.hex')
    await writeFile(boot, toIntelHex(new Uint8Array(32), 0x7ff0))
    await t.rejects(
      startEmulatedUno({ harness: harness.exe, elf: app, link: join(dir, 'uno'), boot }),
      /boot\.hex line 2: data at 0x8000-0x800f, past the end of flash \(0x7fff\)/,
    )
    const garbage = join(dir, 'garbage.elf')
    await writeFile(garbage, 'not an image\n')
    await t.rejects(
      startEmulatedUno({ harness: harness.exe, elf: garbage, link: join(dir, 'uno2') }),
      /garbage\.elf line 1: not an Intel HEX record/,
    )
    const overlap = join(dir, 'overlap.hex')
    await writeFile(overlap, toIntelHex(new Uint8Array(0x7e10)))
    const high = join(dir, 'high.hex')
    await writeFile(high, toIntelHex(new Uint8Array(16), 0x7e00))
    await t.rejects(
      startEmulatedUno({ harness: harness.exe, elf: overlap, link: join(dir, 'uno3'), boot: high }),
      /overlap\.hex reaches 0x7e0f, into the bootloader at 0x7e00/,
    )
  },
)
