// Builds a sketch for an Arduino Uno (ATmega328P, 16 MHz) with Debian's avr-gcc against Debian's
// Arduino core (arduino-core-avr 1.8), the way arduino-cli would: core compiled into an archive so
// only what the sketch uses is linked, the sketch with `#include <Arduino.h>` in front, LTO and
// section garbage collection, then avr-size for the flash and static RAM figures. No downloaded
// toolchain. `npx tsx boards/firmware/uno-build.ts [out-dir]` prints the figures.
import { execFile, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { type ErrorCode, type Failure, fail } from '../../errors/codes.ts'
import { errorText } from '../../errors/text.ts'

const run = promisify(execFile)

export const FIRMWARE_DIR = dirname(fileURLToPath(import.meta.url))
export const LIBRARY_DIR = join(FIRMWARE_DIR, 'svc_companion')
export const SKETCH = join(LIBRARY_DIR, 'examples', 'svc_companion', 'svc_companion.ino')
export const ARDUINO_AVR = process.env.ARDUINO_AVR_DIR ?? '/usr/share/arduino/hardware/arduino/avr'

/** The Uno's limits as boards.txt states them: 32,256 B of flash (the bootloader takes 512), 2 KB of RAM. */
export const UNO_FLASH_MAX = 32_256
export const UNO_RAM = 2048
/** What the sketch's static data may take, leaving 512 B of the 2 KB for the stack. */
export const UNO_STATIC_RAM_MAX = 1_536

const MCU = [
  '-mmcu=atmega328p',
  '-DF_CPU=16000000L',
  '-DARDUINO=10807',
  '-DARDUINO_AVR_UNO',
  '-DARDUINO_ARCH_AVR',
]
// Debian's core 1.8 with gcc-avr 5.4: avr-libc's <float.h> leaves DECIMAL_DIG undefined, which the
// core's Print.cpp needs.
const CORE_FIX = ['-DDECIMAL_DIG=__DECIMAL_DIG__']
const COMMON = [
  '-g',
  '-Os',
  '-ffunction-sections',
  '-fdata-sections',
  '-flto',
  '-fno-fat-lto-objects',
  '-MMD',
]
const CXX = [
  '-std=gnu++11',
  '-fpermissive',
  '-fno-exceptions',
  '-fno-threadsafe-statics',
  '-Wno-error=narrowing',
]

export interface UnoBuild {
  elf: string
  hex: string
  /** .text + .data: what is written to flash. */
  flash: number
  /** .data + .bss: static RAM, before any stack or heap. */
  ram: number
}

/** Why the Uno build cannot run here, or false when every tool and the core are installed. */
export function unoToolsMissing(): string | false {
  for (const tool of ['avr-gcc', 'avr-g++', 'avr-gcc-ar', 'avr-size', 'avr-objcopy']) {
    if (spawnSync(tool, ['--version']).status !== 0)
      return `${tool} is not installed (apt-get install gcc-avr avr-libc)`
  }
  if (!existsSync(join(ARDUINO_AVR, 'cores', 'arduino', 'Arduino.h')))
    return `the Arduino AVR core is not at ${ARDUINO_AVR} (apt-get install arduino-core-avr)`
  return false
}

/**
 * A build tool's failure: `prefix` and the tool's own words (its stderr, else Node's message). A
 * tool that is not there is `UNAVAILABLE`; one that ran and refused gets `code`.
 */
export function toolFailure(prefix: string, err: unknown, code: ErrorCode): Failure {
  const e = err as { code?: unknown; stderr?: string }
  return fail(e.code === 'ENOENT' ? 'UNAVAILABLE' : code, `${prefix}${(e.stderr || errorText(err)).trim()}`)
}

/** Parses `avr-size -A` output into flash and static RAM use. */
export function sizesOf(sizeOutput: string): { flash: number; ram: number } {
  const section = (name: string): number => {
    const m = new RegExp(`^\\${name}\\s+(\\d+)`, 'm').exec(sizeOutput)
    return m ? Number(m[1]) : 0
  }
  return { flash: section('.text') + section('.data'), ram: section('.data') + section('.bss') }
}

export interface BuildOptions {
  /** The sketch to build (default the companion example). */
  sketch?: string
  /** Folders whose headers the sketch includes (default the library's src/). */
  includes?: string[]
  /** Extra -D flags, e.g. `SVC_BOARD="vend2"`. */
  defines?: string[]
}

/**
 * Builds into `outDir`; the error names the step and carries the compiler's own message. The
 * sketch's own steps (compile, link) refuse with `BAD_INPUT`: the caller chose the sketch, its
 * includes and defines. The core, its archive and the hex should not fail: `INTERNAL`.
 */
export async function buildUno(
  outDir: string,
  opts: BuildOptions = {},
): Promise<{ ok: true; build: UnoBuild } | Failure> {
  const sketch = opts.sketch ?? SKETCH
  const includes = opts.includes ?? [join(LIBRARY_DIR, 'src')]
  const core = join(ARDUINO_AVR, 'cores', 'arduino')
  const variant = join(ARDUINO_AVR, 'variants', 'standard')
  const inc = ['-I', core, '-I', variant]
  const defines = (opts.defines ?? []).map((d) => `-D${d}`)
  const coreDir = join(outDir, 'core')
  mkdirSync(coreDir, { recursive: true })
  const step = async (
    what: string,
    cmd: string,
    args: string[],
    code: ErrorCode = 'INTERNAL',
  ): Promise<Failure | undefined> => {
    try {
      await run(cmd, args, { maxBuffer: 16 << 20 })
      return undefined
    } catch (err) {
      return toolFailure(`${what}: `, err, code)
    }
  }
  // The core, one object per source, into core.a (the linker then takes only what is used).
  const objs: string[] = []
  for (const f of readdirSync(core).sort()) {
    const src = join(core, f)
    const obj = join(coreDir, `${f}.o`)
    let args: string[]
    if (f.endsWith('.c'))
      args = ['-c', ...COMMON, '-w', '-std=gnu11', ...MCU, ...CORE_FIX, ...inc, src, '-o', obj]
    else if (f.endsWith('.cpp'))
      args = ['-c', ...COMMON, '-w', ...CXX, ...MCU, ...CORE_FIX, ...inc, src, '-o', obj]
    else if (f.endsWith('.S'))
      args = ['-c', '-g', '-x', 'assembler-with-cpp', '-flto', ...MCU, ...inc, src, '-o', obj]
    else continue
    const err = await step(`core ${f}`, f.endsWith('.c') || f.endsWith('.S') ? 'avr-gcc' : 'avr-g++', args)
    if (err) return err
    objs.push(obj)
  }
  const archive = join(outDir, 'core.a')
  const arErr = await step('core archive', 'avr-gcc-ar', ['rcs', archive, ...objs])
  if (arErr) return arErr

  // The sketch: what the Arduino builder does to an .ino that declares before it uses.
  const name = basename(sketch, '.ino')
  const cpp = join(outDir, `${name}.ino.cpp`)
  writeFileSync(cpp, `#include <Arduino.h>\n#line 1 "${sketch}"\n${readFileSync(sketch, 'utf8')}`)
  const sketchObj = `${cpp}.o`
  const incs = includes.flatMap((i) => ['-I', i])
  const ccErr = await step(
    'sketch',
    'avr-g++',
    [
      '-c',
      ...COMMON,
      '-Wall',
      '-Wextra',
      ...CXX,
      ...MCU,
      ...CORE_FIX,
      ...defines,
      ...inc,
      ...incs,
      cpp,
      '-o',
      sketchObj,
    ],
    'BAD_INPUT',
  )
  if (ccErr) return ccErr
  const elf = join(outDir, `${name}.elf`)
  const ldErr = await step(
    'link',
    'avr-gcc',
    [
      '-w',
      '-Os',
      '-g',
      '-flto',
      '-fuse-linker-plugin',
      '-Wl,--gc-sections',
      '-mmcu=atmega328p',
      '-o',
      elf,
      sketchObj,
      archive,
      '-L',
      outDir,
      '-lm',
    ],
    'BAD_INPUT',
  )
  if (ldErr) return ldErr
  const hex = join(outDir, `${name}.hex`)
  const hexErr = await step('hex', 'avr-objcopy', ['-O', 'ihex', '-R', '.eeprom', elf, hex])
  if (hexErr) return hexErr
  const { stdout } = await run('avr-size', ['-A', elf])
  return { ok: true, build: { elf, hex, ...sizesOf(stdout) } }
}

/** "1,234 B of 32,256 (4%)": a figure beside its limit. */
export function ofLimit(n: number, limit: number): string {
  return `${n.toLocaleString('en')} B of ${limit.toLocaleString('en')} (${Math.round((n / limit) * 100)}%)`
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const missing = unoToolsMissing()
  if (missing) {
    process.stderr.write(`uno-build: ${missing}\n`)
    process.exit(2)
  }
  const out = resolve(process.argv[2] ?? join(tmpdir(), 'svc-uno-build'))
  const r = await buildUno(out)
  if (!r.ok) {
    process.stderr.write(`uno-build: ${r.error}\n`)
    process.exit(1)
  }
  process.stdout.write(
    `${r.build.elf}\nflash ${ofLimit(r.build.flash, UNO_FLASH_MAX)}\nstatic RAM ${ofLimit(r.build.ram, UNO_RAM)}\n`,
  )
}
