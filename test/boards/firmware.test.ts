// The companion firmware's framing and encoding, built on the host with g++ against a tiny
// Arduino shim, must print exactly the golden lines in boards/golden/.
import { execFileSync, spawnSync } from 'node:child_process'
import { join } from 'node:path'
import t from 'tap'
import { tempDir } from '../helpers/tmp.ts'
import { GOLDEN, golden } from './golden.ts'

const gxx = spawnSync('g++', ['--version'])
const haveGxx = gxx.status === 0
const skip = haveGxx ? false : 'g++ is not installed (apt-get install g++): the firmware host test needs it'

t.test('firmware host build matches the golden files', { skip }, async (t) => {
  const dir = await tempDir(t)
  const exe = join(dir, 'host_test')
  const src = join(GOLDEN, '..', 'firmware', 'host', 'host_test.cpp')
  execFileSync('g++', ['-std=c++11', '-Wall', '-Wextra', '-Werror', '-O1', '-o', exe, src])
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
  t.equal(
    run('frame64', golden('framing.in')).toString('latin1'),
    golden('framing-cap64.out').toString('latin1'),
    'framing with a 64-byte buffer',
  )

  // The sketch itself compiles against the same shim (Serial stubbed), so the .ino cannot drift.
  const ino = join(dir, 'sketch.cpp')
  const { writeFileSync, readFileSync } = await import('node:fs')
  writeFileSync(
    ino,
    `#include "${join(GOLDEN, '..', 'firmware', 'host', 'arduino_shim.h')}"\n` +
      'struct ShimSerial : ShimOut { void begin(long) {} int available() { return 0; } int read() { return -1; } } Serial;\n' +
      readFileSync(join(GOLDEN, '..', 'firmware', 'svc_companion', 'svc_companion.ino'), 'utf8').replace(
        '#include "svc_commands.h"',
        `#include "${join(GOLDEN, '..', 'firmware', 'svc_companion', 'svc_commands.h')}"`,
      ) +
      '\nint main() { setup(); loop(); return 0; }\n',
  )
  const sketchExe = join(dir, 'sketch')
  execFileSync('g++', ['-std=c++11', '-Wall', '-Werror', '-o', sketchExe, ino])
  t.equal(
    execFileSync(sketchExe).toString('utf8'),
    '{"event":"hello","board":"vend1","fw":"svc-companion/0.1.0"}\n',
    'the sketch says hello at setup',
  )
})
