// The arduino-mk recipe in boards/README.md ("Building it") run as written: the README's Makefile
// (with this repository's path in USER_LIB_PATH, the one placeholder) beside a copy of the example
// sketch, `make` against Debian's Arduino.mk and core, and the firmware's identity read out of the
// .hex it leaves; then again with the README's line that stamps another version.
import { execFile, spawnSync } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { ARDUINO_AVR, LIBRARY_DIR, SKETCH } from '../../boards/firmware/uno-build.ts'
import { imageIdentity } from '../../bridge/flash/identity.ts'
import { tempDir } from '../helpers/tmp.ts'

const run = promisify(execFile)
const INSTALLED_MK = '/usr/share/arduino/Arduino.mk'
// CI unpacks arduino-mk's own files without the Arduino IDE its package depends on (boards/README.md,
// "Building it"): then the recipe's include names where they are, and nothing else changes.
const ARDUINO_MK = process.env.SVC_ARDUINO_MK || INSTALLED_MK
const README = join(LIBRARY_DIR, '..', '..', 'README.md')
const PLACEHOLDER = '/path/to/svc/boards/firmware'

function missing(): string | false {
  if (!existsSync(ARDUINO_MK)) return `${ARDUINO_MK} is not there (apt-get install arduino-mk)`
  for (const tool of ['make', 'avr-gcc', 'avr-objcopy'])
    if (spawnSync(tool, ['--version']).status !== 0)
      return `${tool} is not installed (apt-get install ${tool === 'make' ? 'make' : 'gcc-avr'})`
  if (!existsSync(join(ARDUINO_AVR, 'cores', 'arduino', 'Arduino.h')))
    return `the Arduino AVR core is not at ${ARDUINO_AVR} (apt-get install arduino-core-avr)`
  return false
}
const why = missing()
if (why) t.comment(`arduino-mk recipe skipped: ${why}`)

/** The README's arduino-mk recipe: its ```make block, and the line that stamps a version. */
function recipe(): { makefile: string; stampLine: string } {
  const doc = readFileSync(README, 'utf8')
  const from = doc.indexOf("**Debian's arduino-mk**")
  if (from < 0) throw new Error(`${README}: no "Debian's arduino-mk" recipe`)
  const block = /```make\n([\s\S]*?)```/.exec(doc.slice(from))
  if (!block) throw new Error(`${README}: the arduino-mk recipe has no \`\`\`make block`)
  const stamp = /`(CPPFLAGS \+= -DSVC_FW_VERSION='"[^"]+"')`/.exec(doc.slice(from))
  if (!stamp) throw new Error(`${README}: the arduino-mk recipe does not say how to stamp a version`)
  return { makefile: block[1]!, stampLine: stamp[1]! }
}

/** Runs make in a fresh folder holding the sketch and `makefile`; the .hex's bytes and make's output. */
async function make(dir: string, makefile: string): Promise<{ bytes: Uint8Array; out: string }> {
  const sketchDir = join(dir, 'svc_companion')
  mkdirSync(sketchDir, { recursive: true })
  copyFileSync(SKETCH, join(sketchDir, 'svc_companion.ino'))
  writeFileSync(join(sketchDir, 'Makefile'), makefile)
  // The test may itself run under make: its flags are not the recipe's.
  const env = { ...process.env }
  for (const k of ['MAKEFLAGS', 'MFLAGS', 'MAKELEVEL', 'MAKEOVERRIDES']) delete env[k]
  // Debian's arduino-mk depends on its Arduino IDE package, whose lib/version.txt tells Arduino.mk
  // the core's layout (1.5 and later: hardware/arduino/avr/). CI unpacks arduino-mk without the
  // IDE (.ci/run), so the version that package gives (1.8.19, read as 1819) is passed instead.
  if (!existsSync('/usr/share/arduino/lib/version.txt')) env.ARDUINO_VERSION = '1819'
  let out: string
  try {
    const r = await run('make', [], { cwd: sketchDir, env, maxBuffer: 32 << 20 })
    out = r.stdout + r.stderr
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string }
    throw new Error(
      `make failed in ${sketchDir}: ${e.message}\n${(e.stdout ?? '').slice(-2000)}\n${e.stderr ?? ''}`,
    )
  }
  const hex = join(sketchDir, 'build-uno', 'svc_companion.hex')
  if (!existsSync(hex)) throw new Error(`make left no ${hex}:\n${out.slice(-2000)}`)
  const bin = join(dir, 'image.bin')
  await run('avr-objcopy', ['-I', 'ihex', '-O', 'binary', hex, bin])
  return { bytes: new Uint8Array(readFileSync(bin)), out }
}

t.test(
  "the README's arduino-mk recipe builds the example, and the image names its firmware",
  { skip: why ? `${why}: the arduino-mk recipe needs it` : false },
  async (t) => {
    const { makefile, stampLine } = recipe()
    t.ok(makefile.includes(PLACEHOLDER), `the documented Makefile names the library folder as ${PLACEHOLDER}`)
    const firmwareDir = join(LIBRARY_DIR, '..')
    const written = makefile
      .replaceAll(PLACEHOLDER, firmwareDir)
      .replace(`include ${INSTALLED_MK}`, `include ${ARDUINO_MK}`)
    const libVersion = /^version=(.+)$/m.exec(
      readFileSync(join(LIBRARY_DIR, 'library.properties'), 'utf8'),
    )![1]

    const dir = await tempDir(t)
    const plain = await make(join(dir, 'plain'), written)
    t.same(
      imageIdentity(plain.bytes),
      { name: 'svc-companion', version: libVersion, proto: 1 },
      'the .hex carries the identity: the library version, protocol 1',
    )
    const program = /Program:\s+(\d+) bytes/.exec(plain.out)
    const data = /Data:\s+(\d+) bytes/.exec(plain.out)
    if (program && data) t.comment(`arduino-mk build: flash ${program[1]} B, static RAM ${data[1]} B`)

    // The README's line for another version, above the include, as it says.
    const include = written.indexOf('include ')
    t.ok(include > 0, 'the Makefile ends by including Arduino.mk')
    const stamped = await make(
      join(dir, 'stamped'),
      `${written.slice(0, include)}${stampLine}\n${written.slice(include)}`,
    )
    const stampedVersion = /"([^"]+)"/.exec(stampLine)![1]
    t.not(stampedVersion, libVersion, 'the README stamps a version other than the default')
    t.same(
      imageIdentity(stamped.bytes),
      { name: 'svc-companion', version: stampedVersion, proto: 1 },
      `with the version line the image names ${stampedVersion}`,
    )
  },
)
