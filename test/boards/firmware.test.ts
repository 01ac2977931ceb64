// The companion library (boards/firmware/svc_companion), built on the host with g++ against a
// small Arduino shim that keeps the chip's limits (pins past the core's tables abort; Serial has
// the AVR core's 64-byte rings in time), must print exactly the golden lines in boards/golden/.
import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { imageIdentity } from '../../bridge/flash/identity.ts'
import { tempDir } from '../helpers/tmp.ts'
import { GOLDEN, golden } from './golden.ts'

const FIRMWARE = join(GOLDEN, '..', 'firmware')
const HOST = join(FIRMWARE, 'host')
const SRC = join(FIRMWARE, 'svc_companion', 'src')
const SKETCH = join(FIRMWARE, 'svc_companion', 'examples', 'svc_companion', 'svc_companion.ino')

const haveGxx = spawnSync('g++', ['--version']).status === 0
const skip = haveGxx ? false : 'g++ is not installed (apt-get install g++): the firmware host test needs it'

t.test('firmware host build matches the golden files', { skip }, async (t) => {
  const dir = await tempDir(t)
  const exe = join(dir, 'host_test')
  execFileSync('g++', [
    '-std=c++11',
    '-Wall',
    '-Wextra',
    '-Werror',
    '-O1',
    '-I',
    HOST,
    '-I',
    SRC,
    '-o',
    exe,
    join(HOST, 'host_test.cpp'),
  ])
  const run = (mode: string, input?: Buffer): Buffer =>
    execFileSync(exe, [mode], { input: input ?? Buffer.alloc(0) })

  t.equal(
    run('events').toString('latin1'),
    golden('events.lines').toString('latin1'),
    'events: hello and message lines, escaping as JSON.stringify',
  )
  const commands = Buffer.concat([golden('commands.lines'), golden('commands-bad.lines')])
  t.equal(
    run('commands', commands).toString('latin1'),
    golden('replies.lines').toString('latin1'),
    'replies to every command; bad lines answered or ignored',
  )
  // Every command at once, at line speed, while replies of up to 140 bytes go out through a
  // 64-byte transmit ring: without reading while it waits to write, the 64-byte receive ring
  // overflows and the fourth command comes back as garbage.
  t.equal(
    run('link', commands).toString('latin1'),
    `${golden('replies.lines').toString('latin1')}# rx overflowed 0\n`,
    'commands sent back to back through the modelled UART: every one answered, nothing lost',
  )
  t.equal(
    run('frame64', golden('framing.in')).toString('latin1'),
    golden('framing-cap64.out').toString('latin1'),
    'framing with a 64-byte buffer',
  )

  // A board whose core marks pin 7 NOT_A_PIN, with 0, 1 and 2 kept by the sketch: refused, not
  // touched (the shim aborts on any access to a pin that is not there).
  const board = [
    { id: 1, cmd: 'gpio_write', args: { pin: 7, value: 1 } },
    { id: 2, cmd: 'gpio_read', args: { pin: 7 } },
    { id: 3, cmd: 'gpio_write', args: { pin: 2, value: 0 } },
    { id: 4, cmd: 'gpio_read', args: { pin: 2 } },
    { id: 5, cmd: 'gpio_write', args: { pin: 1, value: 0 } },
    { id: 6, cmd: 'gpio_write', args: { pin: 8, value: 1 } },
    { id: 7, cmd: 'gpio_read', args: { pin: 255 } },
  ]
  const replies = run('board', Buffer.from(board.map((c) => `${JSON.stringify(c)}\n`).join('')))
    .toString('utf8')
    .split('\n')
  t.same(
    replies.slice(0, -2).map((l) => JSON.parse(l)),
    [
      { id: 1, ok: false, error: 'args.pin: no such pin on this board' },
      { id: 2, ok: false, error: 'args.pin: no such pin on this board' },
      { id: 3, ok: false, error: 'args.pin: used by the firmware itself' },
      { id: 4, ok: true, result: { pin: 2, value: 0 } },
      { id: 5, ok: false, error: 'args.pin: used by the firmware itself' },
      { id: 6, ok: true, result: { pin: 8, value: 1 } },
      { id: 7, ok: false, error: 'args.pin: must be an integer from 0 to 69' },
    ],
    'missing and reserved pins are refused with an error naming why',
  )

  // The example sketch itself compiles against the same shim, so the .ino cannot drift.
  const ino = join(dir, 'sketch.cpp')
  writeFileSync(
    ino,
    `#include <Arduino.h>\nHardwareSerial Serial;\n${readFileSync(SKETCH, 'utf8')}\nint main() { shim_reset_ports(); setup(); loop(); return 0; }\n`,
  )
  const sketchExe = join(dir, 'sketch')
  execFileSync('g++', ['-std=c++11', '-Wall', '-Werror', '-I', HOST, '-I', SRC, '-o', sketchExe, ino])
  t.equal(
    execFileSync(sketchExe).toString('utf8'),
    '{"event":"hello","board":"vend1","fw":"svc-companion/0.2.0","proto":1}\n',
    'the sketch says hello at setup',
  )
  t.same(
    imageIdentity(new Uint8Array(readFileSync(sketchExe))),
    { name: 'svc-companion', version: '0.2.0', proto: 1 },
    'the identity marker is in the built program, as the hello says',
  )
})

t.test('the version and protocol are set at build time, and checked', { skip }, async (t) => {
  const dir = await tempDir(t)
  const build = (defines: string[]): { ok: true; exe: string } | { ok: false; error: string } => {
    const exe = join(dir, `host_${defines.length}_${Math.random().toString(36).slice(2)}`)
    const r = spawnSync('g++', [
      '-std=c++11',
      '-Wall',
      '-Werror',
      ...defines.map((d) => `-D${d}`),
      '-I',
      HOST,
      '-I',
      SRC,
      '-o',
      exe,
      join(HOST, 'host_test.cpp'),
    ])
    return r.status === 0 ? { ok: true, exe } : { ok: false, error: r.stderr.toString('utf8') }
  }
  const older = build(['SVC_FW_VERSION="0.1.9"'])
  if (!older.ok) throw new Error(older.error)
  const hello = execFileSync(older.exe, ['events']).toString('utf8').split('\n')[0]
  t.equal(hello, '{"event":"hello","board":"vend1","fw":"svc-companion/0.1.9","proto":1}')
  const caps = execFileSync(older.exe, ['commands'], { input: '{"id":2,"cmd":"capabilities","args":{}}\n' })
  t.match(JSON.parse(caps.toString('utf8')), { id: 2, ok: true, result: { fw: 'svc-companion/0.1.9' } })
  t.same(imageIdentity(new Uint8Array(readFileSync(older.exe))), {
    name: 'svc-companion',
    version: '0.1.9',
    proto: 1,
  })
  const other = build(['SVC_FW_NAME="vend-fw"', 'SVC_FW_VERSION="3.0.0-rc.1"', 'SVC_PROTO=2'])
  if (!other.ok) throw new Error(other.error)
  t.equal(
    execFileSync(other.exe, ['events']).toString('utf8').split('\n')[0],
    '{"event":"hello","board":"vend1","fw":"vend-fw/3.0.0-rc.1","proto":2}',
  )
  // What would make the marker ambiguous, or the hello bad JSON, does not compile, and says why.
  const refused: Array<[string[], RegExp]> = [
    [['SVC_FW_VERSION="0.1;9"'], /SVC_FW_VERSION: 1 to 31 of/],
    [['SVC_FW_VERSION=""'], /SVC_FW_VERSION: 1 to 31 of/],
    [['SVC_FW_NAME="a/b"'], /SVC_FW_NAME: 1 to 31 of/],
    [['SVC_FW_NAME="a\\"b"'], /SVC_FW_NAME: 1 to 31 of/],
    [[`SVC_FW_VERSION="${'1'.repeat(32)}"`], /SVC_FW_VERSION: 1 to 31 of/],
    [['SVC_PROTO=0'], /SVC_PROTO: a decimal integer from 1 to 255/],
    [['SVC_PROTO=256'], /SVC_PROTO: a decimal integer from 1 to 255/],
    [['SVC_PROTO=010'], /SVC_PROTO: a decimal integer from 1 to 255/],
    [['SVC_FW="x/1"'], /SVC_FW is made from SVC_FW_NAME and SVC_FW_VERSION/],
  ]
  for (const [defines, error] of refused) {
    const r = build(defines)
    t.equal(r.ok, false, defines.join(' '))
    if (!r.ok) t.match(r.error, error, defines.join(' '))
  }
})

// What `arduino-cli lib install --zip-path` and the Library Manager's indexer read: a folder named
// like the library, library.properties with the required fields, headers under src/, and each
// example a folder holding an .ino of its own name (Arduino library specification 1.5).
t.test('the companion is laid out as an Arduino library', async (t) => {
  const lib = join(FIRMWARE, 'svc_companion')
  const props = new Map(
    readFileSync(join(lib, 'library.properties'), 'utf8')
      .split('\n')
      .filter((l) => l.includes('='))
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)] as const),
  )
  for (const key of [
    'name',
    'version',
    'author',
    'maintainer',
    'sentence',
    'paragraph',
    'category',
    'url',
    'architectures',
  ]) {
    t.ok(props.get(key), `library.properties has ${key}`)
  }
  t.equal(props.get('name'), 'svc_companion', 'the name is the folder name')
  t.match(props.get('version'), /^\d+\.\d+\.\d+$/, 'the version is semver')
  t.equal(
    /^#define SVC_FW_VERSION "([^"]+)"/m.exec(readFileSync(join(SRC, 'svc_identity.h'), 'utf8'))?.[1],
    props.get('version'),
    'the firmware says the version the library is published as (svc_identity.h SVC_FW_VERSION)',
  )
  t.ok(
    [
      'Display',
      'Communication',
      'Signal Input/Output',
      'Sensors',
      'Device Control',
      'Timing',
      'Data Storage',
      'Data Processing',
      'Other',
    ].includes(props.get('category') ?? ''),
    'a category the Library Manager knows',
  )
  for (const h of (props.get('includes') ?? '').split(',')) t.ok(existsSync(join(SRC, h)), `src/${h} exists`)
  const examples = readdirSync(join(lib, 'examples'))
  t.ok(examples.length > 0, 'at least one example')
  for (const ex of examples)
    t.ok(existsSync(join(lib, 'examples', ex, `${ex}.ino`)), `examples/${ex}/${ex}.ino`)
  t.same(
    readdirSync(lib).sort(),
    ['examples', 'library.properties', 'src'],
    'nothing else at the top (no stray sources the IDE would compile)',
  )
})
