// The bootloader for the emulated Uno: Debian's optiboot 4.4 (arduino-core-avr), the one an Uno
// ships with, in the 512-byte boot section at 0x7E00.
//
// Debian builds optiboot_atmega328.hex from source with its own avr-gcc (5.4), and that build is
// 532 bytes: it runs from 0x7E00 to 0x8013, 20 bytes past the end of the ATmega328P's flash.
// avrdude refuses to write it to a chip ("address 0x8010 out of range at line 33"), and the
// uno_harness refuses to load it. What would fit is not a working bootloader either: the bytes
// past the end are appStart, which turns the watchdog off before it jumps to the sketch; the call
// wraps around to 0x0004 instead, so the sketch starts with the watchdog still on after every
// watchdog reset (the end of each avrdude session, the bootloader's own timeout) and is reset every
// 16 ms (tried in simavr: some 60 hellos a second). So when the shipped file does not fit, the
// same optiboot.c beside it is built with the Makefile's atmega328 flags plus three of avr-gcc's
// size options, which bring it to 488 bytes; the source, its features and its behaviour stay
// optiboot 4.4's.
import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { parseIntelHex } from '../../../bridge/flash/intel-hex.ts'
import { type Failure, fail } from '../../../errors/codes.ts'
import { ARDUINO_AVR, toolFailure } from '../uno-build.ts'

export const OPTIBOOT_DIR = join(ARDUINO_AVR, 'bootloaders', 'optiboot')
export const OPTIBOOT_HEX = join(OPTIBOOT_DIR, 'optiboot_atmega328.hex')
/** The boot section of an Uno (BOOTSZ for 256 words) and the end of the ATmega328P's flash. */
export const BOOT_START = 0x7e00
export const FLASH_SIZE = 0x8000

// optiboot's Makefile, target atmega328: OPTIMIZE, CFLAGS and LDSECTIONS.
const MAKEFILE_CFLAGS = [
  '-g',
  '-Wall',
  '-Os',
  '-fno-inline-small-functions',
  '-fno-split-wide-types',
  '-mshort-calls',
  '-mmcu=atmega328p',
  '-DF_CPU=16000000L',
  '-DLED_START_FLASHES=3',
  '-DBAUD_RATE=115200',
]
const MAKEFILE_LDFLAGS = [
  '-Wl,--section-start=.text=0x7e00',
  '-Wl,--section-start=.version=0x7ffe',
  '-Wl,--relax',
  '-Wl,--gc-sections',
  '-nostartfiles',
  '-nostdlib',
]
// What makes gcc 5.4's build fit: each function in its own section (so --gc-sections drops the
// unused out-of-line copy of watchdogConfig), and no loop rewriting that costs bytes.
const FIT_FLAGS = ['-ffunction-sections', '-fno-tree-scev-cprop', '-fno-move-loop-invariants']

/** Why optiboot cannot be had here, or false. */
export function optibootMissing(): string | false {
  if (!existsSync(OPTIBOOT_HEX))
    return `Debian's optiboot is not at ${OPTIBOOT_HEX} (apt-get install arduino-core-avr)`
  return false
}

export interface Optiboot {
  /** The Intel HEX to load at the boot section. */
  hex: string
  /** `debian`: the shipped file as it is; `rebuilt`: optiboot.c beside it, built to fit. */
  from: 'debian' | 'rebuilt'
  /** Bytes from the boot section's start to the last one used (the version word at 0x7FFE included). */
  size: number
  /** Why the shipped file was not used, when it was not. */
  note?: string
}

/** Where a hex's data lies, or an error naming the file and line. */
async function extent(path: string): Promise<{ ok: true; first: number; size: number } | Failure> {
  const r = parseIntelHex(await readFile(path, 'utf8'), { where: path, maxSize: 1 << 20 })
  return r.ok ? { ok: true, first: r.value.first, size: r.value.size } : r
}

const fits = (e: { first: number; size: number }): boolean => e.first >= BOOT_START && e.size <= FLASH_SIZE
const hex4 = (n: number): string => `0x${n.toString(16).padStart(4, '0')}`

/**
 * Debian's optiboot for the Uno's boot section; rebuilt from its source into `outDir` when the file
 * does not fit. A rebuild that fails is `INTERNAL` (its flags are ours), one that still does not
 * fit `TOO_LARGE`.
 */
export async function optibootForUno(outDir: string): Promise<{ ok: true; value: Optiboot } | Failure> {
  const missing = optibootMissing()
  if (missing) return fail('UNAVAILABLE', missing)
  const shipped = await extent(OPTIBOOT_HEX)
  if (!shipped.ok) return shipped
  if (fits(shipped))
    return { ok: true, value: { hex: OPTIBOOT_HEX, from: 'debian', size: shipped.size - shipped.first } }
  const note =
    `${OPTIBOOT_HEX} runs from ${hex4(shipped.first)} to ${hex4(shipped.size - 1)}, past the end of the ATmega328P's flash ` +
    `(${hex4(FLASH_SIZE - 1)}); optiboot.c beside it is rebuilt with ${FIT_FLAGS.join(' ')}`
  const src = join(OPTIBOOT_DIR, 'optiboot.c')
  const obj = join(outDir, 'optiboot.o')
  const elf = join(outDir, 'optiboot_atmega328.elf')
  const hex = join(outDir, 'optiboot_atmega328.hex')
  const run = promisify(execFile)
  try {
    await run('avr-gcc', [...MAKEFILE_CFLAGS, ...FIT_FLAGS, '-c', '-o', obj, src])
    await run('avr-gcc', [...MAKEFILE_CFLAGS, ...FIT_FLAGS, ...MAKEFILE_LDFLAGS, '-o', elf, obj])
    // The Makefile's %.hex rule: the code and the version word at 0x7FFE.
    await run('avr-objcopy', [
      '-j',
      '.text',
      '-j',
      '.data',
      '-j',
      '.version',
      '--set-section-flags',
      '.version=alloc,load',
      '-O',
      'ihex',
      elf,
      hex,
    ])
  } catch (err) {
    return toolFailure(`${note}, and that failed: `, err, 'INTERNAL')
  }
  const built = await extent(hex)
  if (!built.ok) return built
  if (!fits(built)) return fail('TOO_LARGE', `${note}, and that still runs to ${hex4(built.size - 1)}`)
  return { ok: true, value: { hex, from: 'rebuilt', size: built.size - built.first, note } }
}
